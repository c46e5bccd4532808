/**
 * `get_message_status`: a message's state, display path and status text (`<state> -
 * <last status line>`), once no command is changing it. Precondition: none. On disk:
 * nothing (reads). Errors: RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_FOUND `msg not
 * found`. Reply: `["ok", {path, status, state}]`.
 */
import type { State } from '../../domain/states.js';
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { messageStatus } from '../lookup.js';

export const getMessageStatus = command({
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', { path: string; status: string; state: State }]> => ['ok', await messageStatus(s, msg_id)],
});
