/**
 * `lease` (pull model): up to `count` ready messages, in que order, each que → run with a
 * lease `{owner, at, until}`; `until` from `ttr_ms`, else the message's own `ttr_ms`, else
 * `default_ttr_ms`, else none. With `wait_ms` and none ready, wait for one (FIFO among
 * waiters, waiters.ts); `waiter` names the wait for `cancel_wait`. Leases whose end has
 * come are ended first. Precondition: a pull queue, UP. On disk: per message, `msg`
 * rewritten with its lease (count + 1, tries − 1, rev + 1) and renamed into run, one
 * durable commit, before the reply. Errors: RQ_NOT_PULL, RQ_BAD_REQUEST `lacking 'owner'
 * field`, `'count' must be at most 1000`, naming the field. Reply: `["ok", [<pulled
 * view>...]]` (empty when the wait ends with none).
 */
import * as v from 'valibot';
import { args, optMs, optNumber, optString, required } from '../args.js';
import { command } from '../command.js';
import type { PulledView } from '../../rpc/queue-api.js';
import { endDueLeases } from '../timers.js';
import { leaseOrWait } from '../waiters.js';

/** The most messages one lease takes. */
export const MAX_LEASE_COUNT = 1000;

export const lease = command({
  needsPull: true,
  arg: args({
    owner: required(
      'owner',
      v.pipe(
        optString('owner'),
        v.transform((x) => (x === '' ? undefined : x)),
      ),
    ),
    ttr_ms: optMs('ttr_ms'),
    default_ttr_ms: optMs('default_ttr_ms'),
    count: v.pipe(
      optNumber('count', { min: 1, integer: true }),
      v.check((x) => x === undefined || x <= MAX_LEASE_COUNT, `'count' must be at most ${MAX_LEASE_COUNT}`),
    ),
    wait_ms: optMs('wait_ms'),
    waiter: optString('waiter'),
  }),
  run: async (s, a, conn): Promise<['ok', PulledView[]]> => {
    const who = { owner: a.owner, ttrMs: a.ttr_ms, defaultTtrMs: a.default_ttr_ms };
    await endDueLeases(s);
    return ['ok', await leaseOrWait(s, who, a.count ?? 1, a.wait_ms ?? 0, a.waiter, conn)];
  },
});
