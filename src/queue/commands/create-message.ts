/**
 * `create_message`: a new message straight into que. The argument is
 * the message input (`dest` required, see domain/message.ts). With `"_announce": true`
 * its full id is announced before the commit. Precondition: the queue is not DOWN. On
 * disk: `que/<id>/msg` made and its index line appended, in one durable commit. Errors:
 * RQ_BAD_MESSAGE `input missing required "dest" parameter` (and the input's checks),
 * RQ_NO_SPACE. Reply: `["ok", <full id>]`.
 */
import { anyArg } from '../args.js';
import { announcer, command } from '../command.js';
import { createMessage as create } from '../create.js';
import { fullIdOf } from '../state.js';

export const createMessage = command({
  writes: true,
  arg: anyArg,
  run: async (s, arg, conn): Promise<['ok', string]> => ['ok', await create(s, arg, 'que', announcer(arg, conn, (id) => fullIdOf(s, id)))],
});
