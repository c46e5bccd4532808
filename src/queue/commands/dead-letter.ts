/**
 * `dead_letter` (pull model): the dead letters' count and the oldest; with `delete`,
 * first remove up to that many, oldest first (those not being changed). Precondition: a
 * pull queue. On disk: the deleted ones renamed into the queue's trash. Errors:
 * RQ_NOT_PULL, RQ_BAD_REQUEST naming the field. Reply: `["ok", {size, head, deleted}]`.
 */
import { args, optNumber } from '../args.js';
import { command } from '../command.js';
import { discard, oldestDead, view } from '../pull-messages.js';
import type { PulledView } from '../../rpc/queue-api.js';

export const deadLetter = command({
  needsPull: true,
  arg: args({ delete: optNumber('delete', { min: 0, integer: true }) }),
  run: (s, a): ['ok', { size: number; head: PulledView | null; deleted: number }] => {
    let deleted = 0;
    for (const id of [...oldestDead(s, a.delete ?? 0)]) {
      if (!s.locks.isBusy(id) && discard(s, 'err', id)) deleted++;
    }
    let head: PulledView | null = null;
    for (const id of s.pull.dead.keys()) {
      try {
        head = view(s, 'err', s.store.readMsg('err', id));
        break;
      } catch {
        // gone meanwhile
      }
    }
    return ['ok', { size: s.pull.dead.size, head, deleted }];
  },
});
