/**
 * `finish` (pull model, Workq complete and fail): a message's outcome, in any state
 * before a final one: with `success` to done, else to err, `result` kept as
 * `attach/result`, the lease dropped. A failure with `max_fails` retries left (and leases
 * left) goes back to que in its place instead, `fails` + 1. `result_wait` calls get the
 * outcome. Precondition: a pull queue; the message in que or run and within its TTL,
 * under its lock. On disk: renamed into done or err (or back into que) with `msg`,
 * `status` and `attach/result`, one durable commit. Errors: RQ_NOT_PULL, RQ_BAD_REQUEST
 * `lacking 'success' field` and naming the field, RQ_NOT_FOUND `msg not found`,
 * RQ_NOT_IN_STATE `msg <id> is already finished`. Reply: `["ok", {id, state}]`.
 */
import { RqError } from '../../domain/errors.js';
import { dueMs } from '../../domain/message.js';
import type { State } from '../../domain/states.js';
import { args, optBase64, optBoolean, optString, ref, required } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { counted, finished, forgetExtId, isSpent, leaseEnded, left, live, requeue, resolveRef } from '../pull-messages.js';
import { RESULT } from '../pull-view.js';
import { watchTtl } from '../que-memory.js';

export const finish = command({
  needsPull: true,
  arg: args({
    ref: ref(),
    success: required('success', optBoolean('success')),
    result: optBase64('result'),
    status: optString('status'),
  }),
  run: (s, a): Promise<['ok', { id: string; state: State }]> => {
    const id = resolveRef(s, a.ref);
    const { success } = a;
    const result = a.result ?? Buffer.alloc(0);
    const status = a.status ?? (success ? 'completed' : 'failed');
    return s.locks.exclusive(id, async () => {
      const state = stateOf(s, id);
      const msg = live(s, state, id);
      if (state === 'done' || state === 'err') throw new RqError('RQ_NOT_IN_STATE', `msg ${id} is already finished`);
      if (state !== 'que' && state !== 'run') throw new RqError('RQ_NOT_FOUND', 'msg not found');
      const now = Date.now();
      leaseEnded(s, state, msg);
      delete msg.lease;
      msg.rev = (msg.rev ?? 0) + 1;
      if (!success) msg.fails = (msg.fails ?? 0) + 1;
      if (!success && (msg.fails ?? 0) < (msg.max_fails ?? 0) && !isSpent(msg)) {
        // Retried: ready now (a scheduled one too), in its place.
        if (dueMs(msg) > now) msg.due = now / 1000;
        await requeue(s, state, id, msg);
        return ['ok', { id, state: 'que' }];
      }
      msg.success = success;
      const to = success ? 'done' : 'err';
      await s.store.move(id, state, to, { msg, files: { [RESULT]: result }, status });
      left(s, state, id);
      counted(s, to, id);
      if (msg.ext_scope !== 'server') forgetExtId(s, to, msg);
      if (msg.ttl_final === true) watchTtl(s, id, msg.expires_at);
      finished(s, id, { state: to, success, result: result.toString('base64') });
      return ['ok', { id, state: to }];
    });
  },
});
