/**
 * `result_wait` (pull model, Workq `result` and `run`): a finished message's outcome, at
 * once or when it comes within `wait_ms` (null when it does not). With `lease_grace`, a
 * message leased when the time is up is waited for until its lease ends. Precondition:
 * the message exists within its TTL. On disk: nothing (reads `attach/result`). Errors:
 * RQ_BAD_REQUEST naming the field, RQ_NOT_FOUND `msg not found`. Reply: `["ok", {state,
 * success, result} | null]`.
 */
import { args, optBoolean, optMs, ref } from '../args.js';
import { command } from '../command.js';
import { stateOf } from '../lookup.js';
import { live, resolveRef } from '../pull-messages.js';
import type { PullResult } from '../../rpc/queue-api.js';
import { pullOutcome } from '../pull-view.js';
import { awaitOutcome } from '../waiters.js';

export const resultWait = command({
  arg: args({ ref: ref(), wait_ms: optMs('wait_ms'), lease_grace: optBoolean('lease_grace') }),
  run: async (s, a, conn): Promise<['ok', PullResult | null]> => {
    const id = resolveRef(s, a.ref);
    const waitMs = a.wait_ms ?? 0;
    const grace = a.lease_grace ?? false;
    const now = await s.locks.exclusive(id, async () => {
      const state = stateOf(s, id);
      const msg = live(s, state, id);
      return state === 'done' || state === 'err' ? pullOutcome(s.store, state, msg) : msg;
    });
    if (!('msg_id' in now)) return ['ok', now];
    conn?.setIdleTimeout(waitMs + (grace && typeof now.ttr_ms === 'number' ? now.ttr_ms : 0) + 60_000);
    return ['ok', await awaitOutcome(s, id, waitMs, grace, conn)];
  },
});
