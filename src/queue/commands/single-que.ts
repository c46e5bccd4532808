/**
 * `single_que`: the first waiting message's full id if any is waiting, else a new
 * message made as create_message makes it. Precondition: the queue is not DOWN. On disk:
 * as create_message, or nothing. Errors: as create_message. Reply: `["ok", <full id>]`.
 */
import { anyArg } from '../args.js';
import { announcer, command } from '../command.js';
import { createMessage } from '../create.js';
import { fullIdOf } from '../state.js';

export const singleQue = command({
  writes: true,
  arg: anyArg,
  run: async (s, arg, conn): Promise<['ok', string]> => {
    const first = s.que.slice(0, 1)[0];
    if (first) return ['ok', fullIdOf(s, first.id)];
    return ['ok', await createMessage(s, arg, 'que', announcer(arg, conn, (id) => fullIdOf(s, id)))];
  },
});
