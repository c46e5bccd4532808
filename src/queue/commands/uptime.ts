/**
 * `uptime`: seconds since the queue process started. Precondition: none (answers while
 * DOWN). On disk: nothing. Errors: none. Reply: `[<seconds>]`.
 */
import { anyArg } from '../args.js';
import { command } from '../command.js';

export const uptime = command({
  whileDown: true,
  arg: anyArg,
  run: (s): [number] => [Math.floor((Date.now() - s.startedAt) / 1000)],
});
