/**
 * `nack` (pull model): a lease ends now, or after `delay_ms`, as a TTR end does (back to
 * que, or to err as a dead letter when no tries are left); with `refund` the lease is
 * undone as if it never was (count − 1, tries + 1). Precondition: a pull queue; the
 * message is leased, under its lock. On disk: renamed run → que (or err) with its `msg`
 * rewritten, one durable commit. Errors: RQ_NOT_PULL, RQ_BAD_REQUEST naming the field,
 * RQ_NOT_FOUND `msg not found`, RQ_NOT_IN_STATE `msg is not leased`. Reply: `["ok", {id,
 * state}]`.
 */
import { RqError } from '../../domain/errors.js';
import type { State } from '../../domain/states.js';
import { anyValue, args, optMs, ref } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { resolveRef } from '../pull-messages.js';
import { endLease } from '../timers.js';

export const nack = command({
  needsPull: true,
  arg: args({ ref: ref(), refund: anyValue, delay_ms: optMs('delay_ms') }),
  run: (s, a): Promise<['ok', { id: string; state: State }]> => {
    const id = resolveRef(s, a.ref);
    return s.locks.exclusive(id, async () => {
      if (stateOf(s, id) !== 'run' || !s.run.get(id)?.msg.lease) throw new RqError('RQ_NOT_IN_STATE', 'msg is not leased');
      return ['ok', { id, state: await endLease(s, id, a.refund === true ? 'refund' : 'fail', a.delay_ms ?? 0) }];
    });
  },
});
