/**
 * The waiting pull commands. A blocking `lease` (`wait_ms`) with no message ready waits in
 * a FIFO list that every message becoming ready wakes (`wake`, from the queue's `nudge`
 * and from a message's lock being freed), with no polling; `cancel_wait` ends the waits
 * it names. A `result_wait` waits for a message's outcome (`finished`, pull-messages.ts).
 * And the lease itself, que → run, for a lease or a waiter.
 */
import { coerceError } from '../domain/errors.js';
import type { Lease, Message } from '../domain/message.js';
import type { RpcConnection } from '../rpc/server.js';
import type { QueEntry } from '../store/que-index.js';
import { waitedMs } from './history.js';
import { addLeased, counted, view } from './pull-messages.js';
import type { PullResult, PulledView } from '../rpc/queue-api.js';
import { isUp, type Lessee, type QueueState, type Waiter } from './state.js';
import { MAX_TIMER_MS } from './timetable.js';
import { armTtr, endLease } from './timers.js';

/** How long a cancelled waiter name is remembered (a wait may reach the queue after its cancel). */
const CANCELLED_MS = 60_000;

/** Lease up to `count` ready messages now, or (with `waitMs`) wait for one; `token` names the wait for `cancel_wait`. */
export function leaseOrWait(s: QueueState, who: Lessee, count: number, waitMs: number, token: string | undefined, conn?: RpcConnection): Promise<PulledView[]> {
  const taken = takeReady(s, who, count);
  if (taken.length > 0 || waitMs === 0) return leased(s, taken);
  if (token !== undefined && s.pull.cancelled.has(token)) return Promise.resolve([]);
  const { waiters } = s.pull;
  return new Promise((resolve) => {
    let settled = false;
    const w: Waiter = {
      who,
      token,
      gone: false,
      timer: undefined,
      settle: (got) => {
        if (settled) return false;
        settled = true;
        clearTimeout(w.timer);
        const at = waiters.indexOf(w);
        if (at >= 0) waiters.splice(at, 1);
        resolve(got);
        return true;
      },
    };
    w.timer = setTimeout(() => w.settle([]), Math.min(waitMs, MAX_TIMER_MS));
    waiters.push(w);
    conn?.setIdleTimeout(waitMs + 60_000);
    // The client went away: its wait ends, and a lease made for it in the race is handed back.
    conn?.onClose(() => {
      w.gone = true;
      w.settle([]);
    });
  });
}

/** End the waits named `token` with no message; returns how many there were. */
export function cancelWaits(s: QueueState, token: string): number {
  const { cancelled, waiters } = s.pull;
  // A wait named after its cancel (the cancel overtook it) answers empty at once.
  cancelled.set(token, Date.now() + CANCELLED_MS);
  for (const [t, until] of cancelled) if (until < Date.now()) cancelled.delete(t);
  const hit = waiters.filter((w) => w.token === token);
  for (const w of hit) w.settle([]);
  return hit.length;
}

/** Serve waiters, first come first served, while messages are ready (a commit, a due timer, a requeue, a resume). */
export function wake(s: QueueState): void {
  const { waiters } = s.pull;
  while (waiters.length > 0 && isUp(s)) {
    const w = waiters[0]!;
    const taken = takeReady(s, w.who, 1);
    if (taken.length === 0) return;
    // Out of the list with its time limit stopped: from here only the lease answers it.
    waiters.shift();
    clearTimeout(w.timer);
    void leased(s, taken).then(async (jobs) => {
      if (!w.gone && w.settle(jobs)) return;
      // Answered meanwhile (the client left): hand the leases back.
      for (const job of jobs) await s.locks.exclusive(job.id, () => endLease(s, job.id, 'refund')).catch(() => undefined);
    });
  }
}

/** The leases that were made; one that failed is logged (its message stays in que). */
async function leased(s: QueueState, taken: Array<Promise<PulledView>>): Promise<PulledView[]> {
  const out: PulledView[] = [];
  for (const r of await Promise.allSettled(taken)) {
    if (r.status === 'fulfilled') out.push(r.value);
    else s.log.error({ err: coerceError(r.reason).message }, 'a lease failed');
  }
  return out;
}

/** Start leases of up to `count` ready messages: taken out of the list at once, each committed in turn. */
function takeReady(s: QueueState, who: Lessee, count: number): Array<Promise<PulledView>> {
  const out: Array<Promise<PulledView>> = [];
  if (!isUp(s)) return out;
  const now = Date.now();
  const picked: QueEntry[] = [];
  for (const e of s.que.readyEntries()) {
    if (picked.length >= count) break;
    if (s.locks.isBusy(e.id)) continue;
    if (e.pull?.e !== undefined && e.pull.e <= now) continue; // expiring: the TTL timer takes it
    picked.push(e);
  }
  for (const e of picked) {
    s.que.remove(e.id);
    out.push(s.locks.exclusive(e.id, () => leaseOne(s, e, who)));
  }
  return out;
}

/** que → run for a lease; `entry` is already out of the list (back in it if the commit fails). */
async function leaseOne(s: QueueState, entry: QueEntry, { owner, ttrMs, defaultTtrMs }: Lessee): Promise<PulledView> {
  const { store, que } = s;
  let msg: Message;
  try {
    msg = store.readMsg('que', entry.id);
  } catch (e) {
    // Gone (deleted by hand meanwhile), or unreadable: never back at the head, where it would block every lease.
    if (store.exists('que', entry.id)) {
      s.log.error({ msg_id: entry.id, err: coerceError(e).message }, 'unreadable message moved to err');
      await store.move(entry.id, 'que', 'err', { status: 'UNREADABLE MESSAGE - MOVING TO ERR' });
      counted(s, 'err', entry.id);
    }
    throw e;
  }
  const now = Date.now();
  const ttr = ttrMs ?? (typeof msg.ttr_ms === 'number' ? msg.ttr_ms : (defaultTtrMs ?? null));
  const lease: Lease = { owner, at: now, until: ttr === null ? null : now + ttr };
  msg.count = (msg.count ?? 0) + 1;
  if (typeof msg.tries === 'number') msg.tries -= 1;
  msg.rev = (msg.rev ?? 0) + 1;
  msg.lease = lease;
  // In run from now on for every lookup (an external id stays taken while the rename commits).
  addLeased(s, entry.id, msg, lease);
  try {
    await store.lease(entry.id, msg);
  } catch (e) {
    s.run.delete(entry.id);
    if (store.exists('que', entry.id)) que.insert(entry);
    throw e;
  }
  armTtr(s, entry.id, lease.until);
  s.stats.runStarted(waitedMs(entry, now));
  const shown = view(s, 'run', msg);
  // A lease that ends as it starts (TTR 0, RQMS time <= 0) is back in que before the answer, so the next lease sees it.
  if (lease.until !== null && lease.until <= Date.now()) await endLease(s, entry.id, 'expired');
  return shown;
}

/** Wait for `finished` on message `id`; null when `waitMs` is up (and, with `grace`, its lease has ended) or the client left. */
export function awaitOutcome(s: QueueState, id: string, waitMs: number, grace: boolean, conn?: RpcConnection): Promise<PullResult | null> {
  const all = s.pull.resultWaiters;
  return new Promise((resolve) => {
    const waiters = all.get(id) ?? new Set();
    all.set(id, waiters);
    let timer: NodeJS.Timeout | undefined;
    const answer = (r: PullResult | null): void => {
      clearTimeout(timer);
      waiters.delete(answer);
      if (waiters.size === 0 && all.get(id) === waiters) all.delete(id);
      resolve(r);
    };
    let leaseGrace = grace;
    const timeUp = (): void => {
      const until = leaseGrace ? s.run.get(id)?.msg.lease?.until : undefined;
      leaseGrace = false;
      if (typeof until === 'number' && until > Date.now()) {
        timer = setTimeout(timeUp, Math.min(until - Date.now(), MAX_TIMER_MS));
        return;
      }
      // A finish committing right now answers this wait: let it first.
      if (s.locks.isBusy(id)) void s.locks.settled(id).then(() => answer(null));
      else answer(null);
    };
    waiters.add(answer);
    timer = setTimeout(timeUp, Math.min(waitMs, MAX_TIMER_MS));
    conn?.onClose(() => answer(null));
  });
}
