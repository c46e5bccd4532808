/**
 * `status`: the queue's status, the admin flags read again now.
 * Precondition: none (answers while DOWN). On disk: nothing. Errors: none. Reply:
 * `["UP" | "PAUSE" | "DOWN" | "SCRIPTERROR"]`.
 */
import { anyArg } from '../args.js';
import { command } from '../command.js';
import { refreshFlags } from '../flags.js';
import { statusOf, type AdminStatus, type OperStatus } from '../state.js';

export const status = command({
  whileDown: true,
  arg: anyArg,
  run: (s): [AdminStatus | OperStatus] => {
    refreshFlags(s);
    return [statusOf(s)];
  },
});
