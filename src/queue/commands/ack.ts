/**
 * `ack` (pull model): a message goes to done with `status` (default `acknowledged`), its
 * queue-scope external id forgotten. `from` limits the states it may be in (default que,
 * run, err); `rev` must match when given. Precondition: a pull queue; the message is in
 * one of `from`, under its lock. On disk: renamed into done with its `status`, `msg` as
 * it was (a leased one keeps its last lease as history), one durable commit. Errors:
 * RQ_NOT_PULL, RQ_BAD_REQUEST naming the field, RQ_NOT_FOUND `msg not found`, RQ_STALE
 * `msg <id> is at rev <n>, not <rev>`. Reply: `["ok", {id}]`.
 */
import * as v from 'valibot';
import { RqError } from '../../domain/errors.js';
import { anyValue, args, optNumber, optString, ref } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { counted, current, forgetExtId, leaseEnded, left, resolveRef } from '../pull-messages.js';

export const ack = command({
  needsPull: true,
  arg: args({
    ref: ref(),
    rev: optNumber('rev', { integer: true }),
    status: optString('status'),
    from: v.pipe(
      anyValue,
      v.transform((x) => x ?? ['que', 'run', 'err']),
      v.check((x) => Array.isArray(x), "'from' must be an array of states"),
      v.transform((x) => x as unknown[]),
    ),
  }),
  run: (s, a): Promise<['ok', { id: string }]> => {
    const id = resolveRef(s, a.ref);
    return s.locks.exclusive(id, async () => {
      const state = stateOf(s, id);
      if (state === undefined || !a.from.includes(state) || (state !== 'que' && state !== 'run' && state !== 'err')) {
        throw new RqError('RQ_NOT_FOUND', 'msg not found');
      }
      const msg = current(s, state, id);
      if (a.rev !== undefined && (msg.rev ?? 0) !== a.rev) throw new RqError('RQ_STALE', `msg ${id} is at rev ${msg.rev ?? 0}, not ${a.rev}`);
      // msg is moved as it is: a leased one keeps its last lease as history, and no file is rewritten.
      await s.store.move(id, state, 'done', { status: a.status ?? 'acknowledged' });
      left(s, state, id);
      leaseEnded(s, state, msg);
      counted(s, 'done', id);
      if (msg.ext_scope !== 'server') forgetExtId(s, 'done', msg);
      return ['ok', { id }];
    });
  },
});
