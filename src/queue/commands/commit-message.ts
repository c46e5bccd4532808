/**
 * `commit_message`: prep → que. Precondition: the message is in prep (memory and disk),
 * under its lock. On disk: `prep/<id>` renamed to `que/<id>` with its `msg`, `status` and
 * `attach/` fsynced and its index line appended, one durable commit. Errors:
 * RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_IN_STATE `cannot find message`, RQ_IO
 * `unknown reason`, RQ_NO_SPACE. Reply: `["ok", "msg commited"]` (RQ's spelling).
 */
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { commitMessage as commit } from '../create.js';

export const commitMessage = command({
  writes: true,
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', 'msg commited']> => {
    await commit(s, msg_id);
    return ['ok', 'msg commited'];
  },
});
