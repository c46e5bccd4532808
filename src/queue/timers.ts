/**
 * The timers of a queue: the due timer (the next delayed message wakes the scheduler and
 * the waiting leases when it comes due), and the pull model's TTR ends (a lease's end) and
 * TTL ends (a message's expiry), each a Timetable (timetable.ts) on one Node timer.
 *
 * A lease is durable before it is answered, so a restart keeps it: recovery gives every
 * leased message back here (`adoptLease`), and a lease that ended while the process was
 * down ends at once. A TTR end that a full disk refuses is tried again a second later,
 * until the disk has room. Every TTR or TTL end runs under the message's lock.
 */
import { coerceError, isNoSpace } from '../domain/errors.js';
import type { Lease, Message } from '../domain/message.js';
import type { State } from '../domain/states.js';
import type { QueEntry } from '../store/que-index.js';
import { stateOf } from './lookup.js';
import { addLeased, counted, current, expiredNow, finished, isRemovable, isSpent, requeue } from './pull-messages.js';
import { watchTtl } from './que-memory.js';
import { isPull, type QueueState } from './state.js';

/** A TTR end that a full disk refused is tried again this much later. */
const NO_SPACE_RETRY_MS = 1_000;

/** Wake the scheduler and the waiting leases at `atMs` (an earlier arming wins). */
export function armDueTimer(s: QueueState, atMs: number): void {
  const d = s.dispatch;
  if (d.dueTimer && d.dueTimerAt <= atMs) return;
  if (d.dueTimer) clearTimeout(d.dueTimer);
  d.dueTimerAt = atMs;
  d.dueTimer = setTimeout(
    () => {
      d.dueTimer = undefined;
      d.dueTimerAt = Infinity;
      s.nudge();
    },
    Math.min(Math.max(atMs - Date.now(), 0), 2 ** 31 - 1),
  );
}

// ───────────────────────────── TTR ─────────────────────────────

/** A lease ends at `until` (null: never). */
export function armTtr(s: QueueState, id: string, until: number | null): void {
  if (until === null) s.pull.leaseEnds.delete(id);
  else s.pull.leaseEnds.set(id, until);
}

/** A lease's end has come (its timer): end it in its turn. */
export function endLeaseLater(s: QueueState, id: string): void {
  void s.locks.exclusive(id, () => endLease(s, id, 'expired')).catch((e: unknown) => leaseNotEnded(s, id, e));
}

/** A TTR end failed: for a full disk it is tried again a second later; else the lease stays in run until a restart. */
function leaseNotEnded(s: QueueState, id: string, e: unknown): void {
  if (isNoSpace(e) && s.run.get(id)?.msg.lease) return armTtr(s, id, Date.now() + NO_SPACE_RETRY_MS);
  s.log.error({ msg_id: id, err: coerceError(e).message }, 'cannot end a lease; it stays in run until restart');
}

/**
 * The lazy check: a lease whose end has come is ended before a lease
 * looks for ready messages, so a message is there again from the very instant its lease
 * runs out, not only once its timer's commit is done.
 */
export async function endDueLeases(s: QueueState): Promise<void> {
  const due = s.pull.leaseEnds.takeDue(Date.now());
  await Promise.all(due.map(({ id }) => s.locks.exclusive(id, () => endLease(s, id, 'expired')).catch((e: unknown) => leaseNotEnded(s, id, e))));
}

/** End a lease (TTR end, nack or refund), under its lock: back to que, or to err as dead when spent. */
export async function endLease(s: QueueState, id: string, how: 'expired' | 'fail' | 'refund', delayMs = 0): Promise<State> {
  const run = s.run.get(id);
  if (!run?.msg.lease) return 'run';
  // A touch that committed while this TTR end waited its turn moved the end: the lease goes on.
  const until = run.msg.lease.until;
  if (how === 'expired' && (until === null || until > Date.now())) {
    armTtr(s, id, until);
    return 'run';
  }
  s.pull.leaseEnds.delete(id);
  const msg: Message = { ...run.msg };
  delete msg.lease;
  const now = Date.now();
  if (how === 'refund') {
    msg.count = Math.max(0, (msg.count ?? 1) - 1);
    if (typeof msg.tries === 'number') msg.tries += 1;
  } else if (isSpent(msg)) {
    msg.dead = true;
    msg.dead_at = now;
    msg.success = false;
    if (!msg.ttl_final) delete msg.expires_at;
    const why = how === 'expired' ? 'lease ran out' : 'failed';
    await s.store.move(id, 'run', 'err', { msg, status: `dead: ${why} with no tries left` });
    s.run.delete(id);
    s.pull.dead.set(id, now);
    counted(s, 'err', id);
    if (!msg.ttl_final) s.pull.expiries.delete(id);
    finished(s, id, { state: 'err', success: false, result: '' });
    return 'err';
  } else if (delayMs > 0) {
    msg.due = (now + delayMs) / 1000;
  } else if (msg.requeue === 'tail') {
    msg.due = now / 1000;
    if (msg.rank !== undefined) msg.rank = now;
  }
  await requeue(s, 'run', id, msg);
  return 'que';
}

// ───────────────────────────── TTL ─────────────────────────────

/**
 * A TTL has ended: remove the message, waiting or leased, or finished when its TTL is
 * final (a dead letter without that has no TTL). One that was not finished (and not
 * ephemeral) counts as evicted.
 */
export function expire(s: QueueState, id: string, at: number): void {
  void s.locks.exclusive(id, async () => {
    const state = stateOf(s, id);
    if (!isRemovable(state)) return;
    let msg: Message;
    try {
      msg = current(s, state, id);
    } catch {
      return;
    }
    if (msg.expires_at === at && expiredNow(s, state, msg)) s.log.info({ msg_id: id, state }, 'message expired (TTL) and removed');
  });
}

// ───────────────────────────── start-up ─────────────────────────────

/** Recovery: a leased message found in run/ stays leased; a lease that ended meanwhile ends now. */
export function adoptLease(s: QueueState, id: string, msg: Message, lease: Lease): void {
  addLeased(s, id, msg, lease);
  armTtr(s, id, lease.until);
  watchTtl(s, id, msg.expires_at);
}

/** Recovery: the TTLs of the waiting messages and the dead letters (read from err/, pull queues only). */
export function loadPullTimers(s: QueueState, entries: Iterable<QueEntry>, errIds: readonly string[]): void {
  for (const e of entries) watchTtl(s, e.id, e.pull?.e);
  if (!isPull(s)) return;
  const found: Array<[string, number]> = [];
  for (const id of errIds) {
    try {
      const msg = s.store.readMsg('err', id);
      if (msg.dead === true) found.push([id, typeof msg.dead_at === 'number' ? msg.dead_at : 0]);
      if (msg.ttl_final === true) watchTtl(s, id, msg.expires_at);
    } catch {
      // unreadable: not a dead letter we can show
    }
  }
  found.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
  for (const [id, at] of found) s.pull.dead.set(id, at);
  void loadFinalTtls(s).catch((e: unknown) => s.log.error({ err: coerceError(e).message }, 'cannot read the TTLs of done messages'));
}

/**
 * Recovery, in the background: the TTLs of done messages that keep one (`ttl_final`).
 * Until a message's timer is armed, readers check its TTL themselves (`live`).
 */
async function loadFinalTtls(s: QueueState): Promise<void> {
  for await (const { dir, ids } of s.store.groups('done')) {
    for (const id of ids) {
      try {
        const msg = await s.store.readGroupMsg(dir, id);
        if (msg.ttl_final === true) watchTtl(s, id, msg.expires_at);
      } catch {
        // gone meanwhile, or unreadable: the dashboard shows it
      }
    }
  }
}

/** Does a finished message go at its own TTL (`ttl_final`), whatever the cleaner's limits? */
export function keepsOwnTtl(s: QueueState, state: State, id: string): boolean {
  if (!isPull(s)) return false;
  try {
    return s.store.readMsg(state, id).ttl_final === true;
  } catch {
    return false;
  }
}
