/**
 * `get_message`: a message's read view with `_attachments` (md5, size,
 * path), once no command is changing it. Precondition: the message exists. On disk:
 * nothing (reads). Errors: RQ_BAD_REQUEST `lacking 'msg_id' field`, RQ_NOT_FOUND `msg not
 * found`, RQ_BAD_MESSAGE `msg couldn't be read`. Reply: `["ok", <view>]`.
 */
import { msgIdArg } from '../args.js';
import { command } from '../command.js';
import { messageView, type MessageView } from '../lookup.js';

export const getMessage = command({
  arg: msgIdArg,
  run: async (s, { msg_id }): Promise<['ok', MessageView]> => ['ok', await messageView(s, msg_id)],
});
