/**
 * The pull model's operations on one message, shared by its commands (commands/publish.ts,
 * lease.ts, ack.ts...) and its timers (timers.ts): which message a reference names (an
 * external id or a short id), the message as it is now, the TTL check of a read, the
 * removal of a message for good, the move back into que, and the bookkeeping as a message
 * leaves a state. Every caller holds the message's lock (message-locks.ts).
 *
 * | command  | move                       | what changes                                              |
 * | -------- | -------------------------- | --------------------------------------------------------- |
 * | publish  | → que                      | a new message with `attach/payload` and the pull fields   |
 * | lease    | que → run                  | `lease {owner, at, until}`, count + 1, tries − 1, rev + 1 |
 * | TTR end  | run → que, or run → err    | lease dropped; dead (err) when no tries (or count ≥ max_count) are left |
 * | nack     | run → que (or err)         | as a TTR end, after a delay; `refund` undoes the lease    |
 * | touch    | run (in place)             | the lease's end                                           |
 * | ack      | que, run or err → done     | a status; the external id is forgotten                    |
 * | set      | que / run / err → que, or → que as new | payload replaced, rev + 1, lease dropped       |
 * | respawn  | err (dead) → que, at the tail | 1 try, a new TTL                                       |
 * | TTL end, purge, dead-letter delete | → trash (removed) | the external id is forgotten              |
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError, coerceError } from '../domain/errors.js';
import { isSafeId } from '../domain/ids.js';
import type { Lease, Message } from '../domain/message.js';
import { isValidQueueName } from '../domain/names.js';
import type { State } from '../domain/states.js';
import { emptyTrash } from '../store/disk-usage.js';
import { EXT_ID_FILE, type ExtIdIndex, type ExtIdTarget } from '../store/ext-ids.js';
import { queueLayout } from '../store/layout.js';
import type { MoveOptions } from '../store/message-store.js';
import { entryFromMessage } from '../store/que-index.js';
import { stateOf } from './lookup.js';
import type { PullResult, PulledView } from '../rpc/queue-api.js';
import { pulledView } from './pull-view.js';
import { queued } from './que-memory.js';
import { isPull, type QueueState } from './state.js';

/** The states a message can be removed from by a pull command. */
export type RemovableState = 'que' | 'run' | 'done' | 'err';

export const isRemovable = (state: State | undefined): state is RemovableState => state === 'que' || state === 'run' || state === 'done' || state === 'err';

/** Does a message whose lease ended go to the dead letter? (No tries left, or its count reached max_count.) */
export function isSpent(msg: Message): boolean {
  if (typeof msg.tries === 'number') return msg.tries <= 0;
  const max = msg.max_count ?? 15;
  return max > 0 && (msg.count ?? 0) >= max;
}

/** Has a message's TTL passed? (In done and err only when its TTL is final.) */
export function pastTtl(state: RemovableState, msg: Message): boolean {
  const at = msg.expires_at;
  return typeof at === 'number' && at <= Date.now() && (state === 'que' || state === 'run' || msg.ttl_final === true);
}

/** A leased message's status text. */
function leaseText(lease: Lease, msg: Message): string {
  const until = lease.until === null ? 'released' : new Date(lease.until).toISOString();
  const tries = typeof msg.tries === 'number' ? `, ${msg.tries} tries left` : '';
  return `leased by ${lease.owner} until ${until}${tries}`;
}

/** A leased message in memory's `run`, with its status text. */
export function addLeased(s: QueueState, id: string, msg: Message, lease: Lease): void {
  s.run.set(id, { id, msg, finishing: false, jobStatus: leaseText(lease, msg), hasStatus: true, timers: [] });
}

/** The pull commands that make or hand out messages need a pull queue: a script would compete for them. */
export function needPull(s: QueueState): void {
  if (!isPull(s)) throw new RqError('RQ_NOT_PULL', `queue ${s.name} runs a script; external workers cannot use it`);
}

/** What the pull commands show of a message of this queue. */
export function view(s: QueueState, state: State, msg: Message, withPayload = true): PulledView {
  return pulledView(s.store, s.name, state, msg, withPayload);
}

/** Leased messages now. */
export function leasedCount(s: QueueState): number {
  let n = 0;
  for (const r of s.run.values()) if (r.msg.lease) n++;
  return n;
}

export function extIndexOf(s: QueueState, scope: unknown): ExtIdIndex {
  return scope === 'server' ? s.pull.serverIds : s.pull.queueIds;
}

/**
 * The message of this queue holding external id `extId`: in any state when the id is
 * the server's (held until removal), else not done (an ack lets a queue's id go).
 */
export function findExt(s: QueueState, extId: string): string | undefined {
  for (const [index, scope] of [[s.pull.queueIds, undefined], [s.pull.serverIds, 'server']] as const) {
    const target = index.lookup(extId);
    if (target !== undefined && target.queue === s.name && stillHolds(s, target, scope)) return target.id;
  }
  return undefined;
}

/**
 * Does the message an index entry names still hold its id? One of this queue: while it
 * is being made or changed, or is there (not done, for a queue-scope id). One of another
 * queue (server scope): the link count says its marker is there (maybe in a message being
 * made), so while that queue is (a deleted queue's directory is renamed away).
 */
export function stillHolds(s: QueueState, held: ExtIdTarget, scope: 'server' | undefined): boolean {
  if (!isSafeId(held.id)) return false;
  if (held.queue !== s.name) return scope === 'server' && isValidQueueName(held.queue) && fs.existsSync(queueLayout(s.root, held.queue).dir);
  if (s.pull.creating.has(held.id) || s.locks.isBusy(held.id)) return true;
  const state = stateOf(s, held.id);
  return state !== undefined && state !== 'relayed' && (state !== 'done' || scope === 'server');
}

/** An external id, else a short id. */
export function resolveRef(s: QueueState, ref: string): string {
  const id = findExt(s, ref) ?? (isSafeId(ref) ? ref : undefined);
  if (id === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  return id;
}

/** The message as it is now: a leased one from memory, else its file. */
export function current(s: QueueState, state: State, id: string): Message {
  const run = state === 'run' ? s.run.get(id) : undefined;
  if (run) return { ...run.msg };
  try {
    return s.store.readMsg(state, id);
  } catch (e) {
    throw new RqError('RQ_NOT_FOUND', 'msg not found', { cause: e });
  }
}

/** The message as it is now, if it is there and its TTL has not passed (else RQ_NOT_FOUND; a passed one is removed now). */
export function live(s: QueueState, state: State | undefined, id: string): Message {
  if (!isRemovable(state)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  const msg = current(s, state, id);
  if (expiredNow(s, state, msg)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
  return msg;
}

/**
 * A message whose TTL has passed is removed now (its timer, or the lazy check of a read
 * before the timer has run); one not finished (nor ephemeral) counts as evicted.
 * Returns whether it was removed.
 */
export function expiredNow(s: QueueState, state: RemovableState, msg: Message): boolean {
  if (!pastTtl(state, msg)) return false;
  if (!discard(s, state, msg.msg_id)) return false;
  if ((state === 'que' || state === 'run') && msg.ephemeral !== true) s.stats.evicted++;
  return true;
}

/** Hand a message's outcome to every `result_wait` on it. */
export function finished(s: QueueState, id: string, r: PullResult): void {
  for (const answer of [...(s.pull.resultWaiters.get(id) ?? [])]) answer(r);
}

/** A message left err (an operator's delete, a clean, a pull command): it is no dead letter any more. */
export function forgetErr(s: QueueState, id: string): void {
  s.errIds.delete(id);
  s.pull.dead.delete(id);
}

/** A message entered a final state by a pull command: count it. */
export function counted(s: QueueState, to: 'done' | 'err', id: string): void {
  if (to === 'err') s.errIds.add(id);
  else s.counts.done++;
  s.stats.messageFinished(to);
}

/** A message was acked or finished from `state`: a lease's time (in run) is a run's. */
export function leaseEnded(s: QueueState, state: State, msg: Message): void {
  if (state === 'run' && msg.lease) s.stats.runEnded((Date.now() - msg.lease.at) / 1000);
}

/** Forget a message in memory as it leaves `state` (the store has moved it). */
export function left(s: QueueState, state: State, id: string): void {
  s.pull.expiries.delete(id);
  if (state === 'que') s.que.remove(id);
  if (state === 'run') {
    s.pull.leaseEnds.delete(id);
    s.run.delete(id);
  }
  if (state === 'err') forgetErr(s, id);
  if (state === 'done') s.counts.done--;
}

/** The message, now in `state`, lets its external id go. */
export function forgetExtId(s: QueueState, state: State, msg: Message): void {
  if (typeof msg.ext_id === 'string') extIndexOf(s, msg.ext_scope).release(msg.ext_id, path.join(s.layout.msgDir(state, msg.msg_id), EXT_ID_FILE));
}

/** Remove a message for good (TTL, purge, dead-letter delete, remove): into the trash, emptied soon after. */
export function discard(s: QueueState, state: RemovableState, id: string): boolean {
  let msg: Message | undefined;
  try {
    msg = current(s, state, id);
  } catch {
    msg = undefined;
  }
  if (!s.store.discard(state, id)) return false;
  left(s, state, id);
  // After the rename: a crash before it keeps the message and its entry together.
  if (typeof msg?.ext_id === 'string') extIndexOf(s, msg.ext_scope).release(msg.ext_id, path.join(s.layout.trashEntry(state, id), EXT_ID_FILE));
  s.pull.trashTimer ??= setTimeout(() => {
    s.pull.trashTimer = undefined;
    emptyTrash(s.layout).catch((e: unknown) => s.log.warn({ err: coerceError(e).message }, 'cannot empty the trash'));
  }, 1_000);
  return true;
}

/**
 * Back into que with `msg` saved in the same commit (one in que is rewritten where it
 * is): forgotten where it was, listed in its place, and waiters woken.
 */
export async function requeue(s: QueueState, state: 'que' | 'run' | 'err', id: string, msg: Message, opts: Omit<MoveOptions, 'msg'> = {}): Promise<void> {
  if (state === 'que') await s.store.rewrite('que', id, { ...opts, msg });
  else {
    await s.store.enqueue(id, state, { ...opts, msg });
    left(s, state, id);
  }
  queued(s, entryFromMessage(msg));
}

/** Dead letters, oldest first, at most `limit`. */
export function* oldestDead(s: QueueState, limit: number): Generator<string> {
  let n = 0;
  for (const id of s.pull.dead.keys()) {
    if (n++ >= limit) return;
    yield id;
  }
}
