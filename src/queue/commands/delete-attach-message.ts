/**
 * `delete_attach_message`: remove an attachment of a prep message. Precondition: the
 * message is in prep, under its lock. On disk: `attach/<name>` removed (durable with the
 * commit). Errors: RQ_NOT_FOUND `msg not found`, RQ_NOT_IN_STATE `msg not in prep`, and
 * RQ's attachment refusals, which RQ answered `[false, text]` and so does this command
 * (`No message on disk`, `No attach directory for msg`, `No attachment with that named
 * for msg`). Reply: `["ok", "Attachment deleted successfully"]`.
 */
import { RqError } from '../../domain/errors.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';

export const deleteAttachMessage = command({
  arg: msgIdArg,
  run: async (s, arg): Promise<['ok', 'Attachment deleted successfully'] | [false, string]> => {
    const id = arg.msg_id;
    try {
      await s.locks.exclusive(id, async () => {
        const state = stateOf(s, id);
        if (state === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
        if (state !== 'prep') throw new RqError('RQ_NOT_IN_STATE', 'msg not in prep');
        s.store.deleteAttachment(id, arg['attachment_name']);
      });
    } catch (e) {
      if (e instanceof RqError && e.code === 'RQ_ATTACH') return [false, e.message];
      throw e;
    }
    return ['ok', 'Attachment deleted successfully'];
  },
});
