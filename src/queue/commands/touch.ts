/**
 * `touch` (pull model): the lease now ends `ttr_ms` from now; `rev` must match when
 * given. Precondition: a pull queue; the message is leased, under its lock. On disk: its
 * `msg` rewritten in run with the new lease end, one durable commit. Errors: RQ_NOT_PULL,
 * RQ_BAD_REQUEST `lacking 'ttr_ms' field` and naming the field, RQ_NOT_FOUND `msg not
 * found`, RQ_NOT_IN_STATE `msg is not leased`, RQ_STALE. Reply: `["ok", {until}]`.
 */
import { RqError } from '../../domain/errors.js';
import type { Message } from '../../domain/message.js';
import { args, optMs, optNumber, ref, required } from '../args.js';
import { command } from '../command.js';
import { addLeased, resolveRef } from '../pull-messages.js';
import { armTtr } from '../timers.js';

export const touch = command({
  needsPull: true,
  arg: args({ ref: ref(), ttr_ms: required('ttr_ms', optMs('ttr_ms')), rev: optNumber('rev', { integer: true }) }),
  run: (s, a): Promise<['ok', { until: number }]> => {
    const id = resolveRef(s, a.ref);
    return s.locks.exclusive(id, async () => {
      const run = s.run.get(id);
      if (!run?.msg.lease) throw new RqError('RQ_NOT_IN_STATE', 'msg is not leased');
      if (a.rev !== undefined && (run.msg.rev ?? 0) !== a.rev) throw new RqError('RQ_STALE', `msg ${id} is at rev ${run.msg.rev ?? 0}, not ${a.rev}`);
      const until = Date.now() + a.ttr_ms;
      const lease = { ...run.msg.lease, until };
      const msg: Message = { ...run.msg, lease };
      await s.store.rewrite('run', id, { msg });
      addLeased(s, id, msg, lease);
      armTtr(s, id, until);
      return ['ok', { until }];
    });
  },
});
