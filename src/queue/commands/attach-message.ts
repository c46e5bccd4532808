/**
 * `attach_message`: attach the file `pathname` (absolute) to a prep
 * message as `name` (else the file's base name). Precondition: the message is in prep,
 * under its lock. On disk: the file hard-linked (or copied) in as `attach/<name>.tmp`,
 * hashed, renamed to `attach/<name>`; durable with the commit (store/attachments.ts).
 * Errors: RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_IN_STATE `cannot find message`,
 * RQ_ATTACH with RQ's texts (`No message on disk`, `Invalid pathname...`, the name's
 * checks), RQ_NO_SPACE. Reply: `["ok", "<md5>-Attached successfully"]`.
 */
import { RqError } from '../../domain/errors.js';
import { isSafeId } from '../../domain/ids.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';

export const attachMessage = command({
  writes: true,
  arg: msgIdArg,
  run: async (s, arg): Promise<['ok', `${string}-Attached successfully`]> => {
    const id = arg.msg_id;
    if (!isSafeId(id)) throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
    const md5 = await s.locks.exclusive(id, async () => {
      if (!s.prep.includes(id)) throw new RqError('RQ_NOT_IN_STATE', 'cannot find message');
      return s.store.attach(id, arg['pathname'], arg['name']);
    });
    return ['ok', `${md5}-Attached successfully`];
  },
});
