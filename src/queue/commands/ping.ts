/**
 * `ping`: is the queue process answering? Precondition: none (answers while DOWN). On
 * disk: nothing. Errors: none. Reply: `["pong"]`.
 */
import { anyArg } from '../args.js';
import { command } from '../command.js';

export const ping = command({ whileDown: true, arg: anyArg, run: (): ['pong'] => ['pong'] });
