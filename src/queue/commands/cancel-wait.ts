/**
 * `cancel_wait` (pull model): end the blocking leases named `waiter` with no message; a
 * wait that arrives after its cancel (the cancel overtook it) answers empty at once.
 * Precondition: not DOWN. On disk: nothing. Errors: RQ_BAD_REQUEST `lacking 'waiter'
 * field`. Reply: `["ok", <waits ended>]`.
 */
import { args, optString, required } from '../args.js';
import { command } from '../command.js';
import { cancelWaits } from '../waiters.js';

export const cancelWait = command({
  arg: args({ waiter: required('waiter', optString('waiter')) }),
  run: (s, { waiter }): ['ok', number] => ['ok', cancelWaits(s, waiter)],
});
