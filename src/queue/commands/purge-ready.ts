/**
 * `purge_ready` (pull model): remove every ready message not being changed; delayed,
 * leased and dead ones stay. Precondition: a pull queue. On disk: each renamed into the
 * queue's trash, deleted soon after. Errors: RQ_NOT_PULL. Reply: `["ok", <removed>]`.
 */
import { anyArg } from '../args.js';
import { command } from '../command.js';
import { discard } from '../pull-messages.js';

export const purgeReady = command({
  needsPull: true,
  arg: anyArg,
  run: (s): ['ok', number] => {
    let n = 0;
    for (const e of [...s.que.readyEntries()]) {
      if (s.locks.isBusy(e.id)) continue;
      if (discard(s, 'que', e.id)) n++;
    }
    return ['ok', n];
  },
});
