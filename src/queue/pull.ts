/**
 * The pull model of a queue process (ARCHITECTURE.md "Two kinds of worker"): external
 * workers lease messages instead of the queue forking a script. Every front door (lmstfy,
 * Cloudq, RQMS, and Workq later) reaches these transitions through the queue commands
 * (commands.ts), written once here:
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
 *
 * A lease is durable before it is answered (the msg with its lease is fsynced with the
 * rename), so a restart keeps it: start-up recovery gives every leased message back to
 * this module (`adopt`), which applies the TTR rule to the leases that ended while the
 * process was down. TTR ends, delays (the engine's due timer) and TTLs run on
 * millisecond timers. Blocking leases wait in a FIFO list that every message becoming
 * ready wakes (`wake`), with no polling. A TTR end that a full disk refuses is tried again
 * a second later, until the disk has room.
 *
 * Every operation that changes a message runs under its lock (message-locks.ts, shared
 * with the engine), so an ack racing a TTR end or a set sees the message in one state or
 * the next, never halfway.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError, coerceError, isNoSpace } from '../domain/errors.js';
import { idTimeMs, isSafeId } from '../domain/ids.js';
import { PARAM_KEYS, dueMs, isPlainObject, type Lease, type Message, type MessageInput } from '../domain/message.js';
import type { State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import type { RpcConnection } from '../rpc/server.js';
import { emptyTrash } from '../store/disk-usage.js';
import { isValidQueueName } from '../domain/names.js';
import { EXT_ID_FILE, extIdIndex, markerContent, type ExtIdIndex, type ExtIdTarget } from '../store/ext-ids.js';
import { queueLayout, type QueueLayout } from '../store/layout.js';
import type { Allocated, CreateOptions, MessageStore, MoveOptions } from '../store/message-store.js';
import { entryFromMessage, type QueEntry } from '../store/que-index.js';
import type { MessageLocks } from './message-locks.js';
import type { QueList } from './que-list.js';
import { MAX_TIMER_MS, Timetable } from './timetable.js';

/** The attachment that holds a pull message's body. */
export const PAYLOAD = 'payload';
/** The most messages one lease takes. */
export const MAX_LEASE_COUNT = 1000;
/** The longest external id, in bytes (RQMS allows 1024). */
const MAX_EXT_ID_BYTES = 1024;
/** How long a cancelled waiter name is remembered (a wait may reach the queue after its cancel). */
const CANCELLED_MS = 60_000;
/** The longest delay, TTL or TTR: lmstfy's uint32 seconds (136 years). */
const MAX_MS = 4_294_967_295_000;
/** The range of an instant (epoch ms): JavaScript's Date. */
const MAX_INSTANT = 8.64e15;
/** A TTR end that a full disk refused is tried again this much later. */
const NO_SPACE_RETRY_MS = 1_000;
/** The attachment that holds a finished message's result. */
export const RESULT = 'result';

/** What the engine lends this module: its memory of the queue and its bookkeeping. */
export interface PullHost {
  name: string;
  store: MessageStore;
  layout: QueueLayout;
  log: Logger;
  que: QueList;
  /** Is this a pull queue (no script)? Leases are refused otherwise. */
  isPull(): boolean;
  /** May messages be handed out now (admin UP)? */
  isUp(): boolean;
  /** The queue's per-message locks (the engine's): every operation that changes a message takes its lock. */
  locks: MessageLocks;
  /** Where a message is (the engine's lookup), or undefined. */
  stateOf(id: string): State | undefined;
  /** A leased message's run entry: add, get, remove (the engine's `run` map). */
  runs: {
    add(id: string, msg: Message, status: string): void;
    get(id: string): { msg: Message } | undefined;
    delete(id: string): void;
    leased(): number;
  };
  /** A message entered que: list it and wake waiters. */
  queued(entry: QueEntry): void;
  /** A message left for a final state or was removed from one: keep the counts. */
  counted(event: { to: 'done' | 'err' } | { from: 'err' | 'done' }, id: string): void;
  /** Make a message (the engine's create) with these attachments, and its external id's marker. */
  create(input: MessageInput, extra: (msg: Message) => void, files: Record<string, Buffer>, marker: CreateOptions['marker'], allocated?: Allocated): Promise<Message>;
}

/** A message as the pull commands show it (the front doors' PulledJob). */
export interface PulledView {
  queue: string;
  /** rq's short id (the directory name). */
  id: string;
  /** The external id (lmstfy job id, RQMS item id), or null. */
  ext_id: string | null;
  state: State;
  /** `attach/payload`, base64; null when the message has none (an RQ-native message). */
  payload: string | null;
  /** param1..param4, null when absent. */
  params: unknown[];
  src: unknown;
  /** When the message was created (from its id), epoch ms. */
  created_ms: number;
  /** When it is (or was) due, epoch ms. */
  due_ms: number;
  /** When it expires (TTL), epoch ms; null for never. */
  expires_at: number | null;
  /** Deliveries left (after this one, in a lease reply); null when not counted by tries. */
  tries: number | null;
  /** Leases so far (RQ's `count`). */
  count: number;
  /** Leases before a lease that ends sends it to err; 0 = no limit. */
  max_count: number;
  /** Raised by every publish, set and lease. */
  rev: number;
  priority: number;
  /** In err as a dead letter. */
  dead: boolean;
  /** The live lease: who, since when, until when (epoch ms; null = no expiry). */
  lease: Lease | null;
  /** A lease that names no TTR lasts this long (ms); null: none. */
  ttr_ms: number | null;
  /** Explicit failures so far, and the retries allowed (0: none). */
  fails: number;
  max_fails: number;
  /** A finished message's outcome; null before. */
  success: boolean | null;
  /** When a scheduled message was due (epoch ms); null when it was not scheduled. */
  scheduled_at: number | null;
  /** The TTL as given (ms, decimal); null when none was given. */
  ttl: string | null;
  /** Workq's max-attempts as given; null when not given. */
  max_attempts: number | null;
}

/** The states a message can be removed from by a pull command. */
type RemovableState = 'que' | 'run' | 'done' | 'err';

const isRemovable = (state: State | undefined): state is RemovableState => state === 'que' || state === 'run' || state === 'done' || state === 'err';

/** A finished message's outcome, as `result_wait` answers it. */
export interface PullResult {
  state: 'done' | 'err';
  success: boolean;
  /** `attach/result`, base64 ('' when none). */
  result: string;
}

/** Who leases, and for how long: `ttrMs`, else the message's own `ttr_ms`, else `defaultTtrMs`, else no end. */
interface Lessee {
  owner: string;
  ttrMs: number | undefined;
  defaultTtrMs: number | undefined;
}

interface Waiter {
  who: Lessee;
  token: string | undefined;
  /** Out of the list, timer stopped, answered: true the first time, false after (already answered). */
  settle: (jobs: PulledView[]) => boolean;
  /** The wait's time limit. */
  timer: NodeJS.Timeout | undefined;
  /** The client closed its connection. */
  gone: boolean;
}

// ───────────────────────────── argument checks ─────────────────────────────

function bad(text: string): RqError {
  return new RqError('RQ_BAD_REQUEST', text);
}

function optNumber(arg: Record<string, unknown>, key: string, o: { min?: number; max?: number; integer?: boolean } = {}): number | undefined {
  const v = arg[key];
  if (v === undefined || v === null) return undefined;
  const inRange = typeof v === 'number' && (o.min === undefined || v >= o.min) && (o.max === undefined || v <= o.max);
  if (typeof v !== 'number' || !Number.isFinite(v) || (o.integer && !Number.isInteger(v)) || !inRange) {
    const range = `${o.min !== undefined ? ` >= ${o.min}` : ''}${o.max !== undefined ? ` and <= ${o.max}` : ''}`;
    throw bad(`'${key}' must be ${o.integer ? 'an integer' : 'a number'}${range}, got ${JSON.stringify(v)}`);
  }
  return v;
}

/** A duration in ms: 0..MAX_MS. */
const optMs = (arg: Record<string, unknown>, key: string): number | undefined => optNumber(arg, key, { min: 0, max: MAX_MS });

function optString(arg: Record<string, unknown>, key: string): string | undefined {
  const v = arg[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw bad(`'${key}' must be a string, got ${JSON.stringify(v)}`);
  return v;
}

function extIdOf(arg: Record<string, unknown>, key = 'ext_id'): string | undefined {
  const v = optString(arg, key);
  if (v !== undefined && (v === '' || Buffer.byteLength(v) > MAX_EXT_ID_BYTES)) throw bad(`'${key}' must be 1 to ${MAX_EXT_ID_BYTES} bytes`);
  return v;
}

function optBoolean(arg: Record<string, unknown>, key: string): boolean | undefined {
  const v = arg[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw bad(`'${key}' must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function optBase64(arg: Record<string, unknown>, key: string): Buffer | undefined {
  const text = optString(arg, key);
  if (text !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) throw bad(`'${key}' must be base64`);
  return text === undefined ? undefined : Buffer.from(text, 'base64');
}

const optInstant = (arg: Record<string, unknown>, key: string): number | undefined => optNumber(arg, key, { min: -MAX_INSTANT, max: MAX_INSTANT });

function refOf(arg: Record<string, unknown>): string {
  const ref = extIdOf(arg, 'ref');
  if (ref === undefined) throw bad("lacking 'ref' field (an external id or a message id)");
  return ref;
}

/** The fields of a publish or set, checked. */
interface PublishFields {
  src: string;
  payload: Buffer | undefined;
  params: Partial<Record<(typeof PARAM_KEYS)[number], unknown>>;
  extId: string | undefined;
  delayMs: number;
  ttlMs: number | undefined;
  tries: number | undefined;
  maxCount: number | undefined;
  priority: number | undefined;
  rank: number | undefined;
  sortKey: string | undefined;
  requeue: 'tail' | 'place' | undefined;
  // Workq's job fields (see Message):
  extScope: 'server' | undefined;
  dueAt: number | undefined;
  expiresAt: number | undefined;
  ttlFinal: boolean | undefined;
  ttl: string | undefined;
  ttrMs: number | undefined;
  maxFails: number | undefined;
  scheduledAt: number | undefined;
  ephemeral: boolean | undefined;
  maxAttempts: number | undefined;
}

function publishFields(arg: Record<string, unknown>): PublishFields {
  const params = arg['params'] ?? {};
  if (!isPlainObject(params) || Object.keys(params).some((k) => !(PARAM_KEYS as readonly string[]).includes(k))) {
    throw bad(`'params' must be an object with keys among ${PARAM_KEYS.join(', ')}`);
  }
  const requeue = arg['requeue'] ?? undefined;
  if (requeue !== undefined && requeue !== 'tail' && requeue !== 'place') throw bad(`'requeue' must be "tail" or "place", got ${JSON.stringify(requeue)}`);
  const ttl = optMs(arg, 'ttl_ms');
  const extScope = arg['ext_scope'] ?? undefined;
  if (extScope !== undefined && extScope !== 'server') throw bad(`'ext_scope' must be "server", got ${JSON.stringify(extScope)}`);
  const ttlText = optString(arg, 'ttl');
  if (ttlText !== undefined && !/^\d{1,20}$/.test(ttlText)) throw bad(`'ttl' must be a decimal number of ms, got ${JSON.stringify(ttlText)}`);
  return {
    src: optString(arg, 'src') ?? 'pull',
    payload: optBase64(arg, 'payload'),
    params,
    extId: extIdOf(arg),
    delayMs: optMs(arg, 'delay_ms') ?? 0,
    ttlMs: ttl === 0 ? undefined : ttl,
    tries: optNumber(arg, 'tries', { min: 1, integer: true }),
    maxCount: optNumber(arg, 'max_count', { min: 0, integer: true }),
    priority: optNumber(arg, 'priority'),
    rank: optNumber(arg, 'rank'),
    sortKey: optString(arg, 'sort_key'),
    requeue,
    extScope,
    dueAt: optInstant(arg, 'due_at'),
    expiresAt: optInstant(arg, 'expires_at'),
    ttlFinal: optBoolean(arg, 'ttl_final'),
    ttl: ttlText,
    ttrMs: optMs(arg, 'ttr_ms'),
    maxFails: optNumber(arg, 'max_fails', { min: 0, integer: true }),
    scheduledAt: optInstant(arg, 'scheduled_at'),
    ephemeral: optBoolean(arg, 'ephemeral'),
    maxAttempts: optNumber(arg, 'max_attempts', { min: 0, integer: true }),
  };
}

/** The pull fields of a message from a publish or set (those not given are removed). */
function applyFields(msg: Message, f: PublishFields, now: number): void {
  const set = <K extends keyof Message>(key: K, value: Message[K] | undefined): void => {
    if (value === undefined) delete msg[key];
    else msg[key] = value;
  };
  set('ext_id', f.extId);
  set('priority', f.priority);
  set('rank', f.rank);
  set('sort_key', f.sortKey);
  set('expires_at', f.expiresAt ?? (f.ttlMs === undefined ? undefined : now + f.ttlMs));
  set('tries', f.tries);
  set('requeue', f.requeue);
  set('ext_scope', f.extScope);
  set('ttl_final', f.ttlFinal);
  set('ttl', f.ttl);
  set('ttr_ms', f.ttrMs);
  set('max_fails', f.maxFails);
  set('scheduled_at', f.scheduledAt);
  set('ephemeral', f.ephemeral);
  set('max_attempts', f.maxAttempts);
  msg.due = (f.dueAt ?? now + f.delayMs) / 1000;
  if (f.maxCount !== undefined) msg.max_count = f.maxCount;
}

/** Does a message whose lease ended go to the dead letter? (No tries left, or its count reached max_count.) */
function isSpent(msg: Message): boolean {
  if (typeof msg.tries === 'number') return msg.tries <= 0;
  const max = msg.max_count ?? 15;
  return max > 0 && (msg.count ?? 0) >= max;
}

/** Has a message's TTL passed? (In done and err only when its TTL is final.) */
function pastTtl(state: RemovableState, msg: Message): boolean {
  const at = msg.expires_at;
  return typeof at === 'number' && at <= Date.now() && (state === 'que' || state === 'run' || msg.ttl_final === true);
}

function leaseText(lease: Lease, msg: Message): string {
  const until = lease.until === null ? 'released' : new Date(lease.until).toISOString();
  const tries = typeof msg.tries === 'number' ? `, ${msg.tries} tries left` : '';
  return `leased by ${lease.owner} until ${until}${tries}`;
}

export class PullDesk {
  private readonly h: PullHost;
  /** External ids unique in this queue, and across the server (`ext_scope` server). */
  private readonly queueIds: ExtIdIndex;
  private readonly serverIds: ExtIdIndex;
  private readonly waiters: Waiter[] = [];
  /** Dead letters, oldest first (a Map keeps insertion order; they die in time order): id → dead_at. */
  private readonly dead = new Map<string, number>();
  /** When each lease ends (TTR). */
  private readonly leaseEnds = new Timetable((id) => this.endLeaseLater(id));
  /** When each waiting or leased message expires (TTL). */
  private readonly expiries = new Timetable((id, at) => this.expire(id, at));
  /** Waiter names cancelled lately, until when they are remembered. */
  private readonly cancelled = new Map<string, number>();
  private trashTimer: NodeJS.Timeout | undefined;
  /** Waiting `result_wait` calls, by message. */
  private readonly resultWaiters = new Map<string, Set<(r: PullResult) => void>>();
  /** Messages removed by their TTL before they finished, since this process started. */
  private evicted = 0;
  private readonly started = Date.now();
  /** Messages whose create (with an external id claimed) has not committed yet: settled when it has or failed. */
  private readonly creating = new Map<string, Promise<void>>();

  constructor(host: PullHost) {
    this.h = host;
    this.queueIds = extIdIndex(host.layout.idsDir);
    this.serverIds = extIdIndex(host.layout.root.serverIdsDir);
  }

  // ───────────────────────────── start-up ─────────────────────────────

  /** Recovery: a leased message found in run/ stays leased; a lease that ended meanwhile ends now. */
  adopt(id: string, msg: Message, lease: Lease): void {
    this.h.runs.add(id, msg, leaseText(lease, msg));
    this.armTtr(id, lease.until);
    this.watchTtl(id, msg.expires_at);
  }

  /** Recovery: the TTLs of the waiting messages and the dead letters (read from err/, pull queues only). */
  load(entries: Iterable<QueEntry>, errIds: readonly string[]): void {
    for (const e of entries) this.watchTtl(e.id, e.pull?.e);
    if (!this.h.isPull()) return;
    const found: Array<[string, number]> = [];
    for (const id of errIds) {
      try {
        const msg = this.h.store.readMsg('err', id);
        if (msg.dead === true) found.push([id, typeof msg.dead_at === 'number' ? msg.dead_at : 0]);
        if (msg.ttl_final === true) this.watchTtl(id, msg.expires_at);
      } catch {
        // unreadable: not a dead letter we can show
      }
    }
    found.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1));
    for (const [id, at] of found) this.dead.set(id, at);
    void this.loadFinalTtls().catch((e: unknown) => this.h.log.error({ err: coerceError(e).message }, 'cannot read the TTLs of done messages'));
  }

  /**
   * Recovery, in the background: the TTLs of done messages that keep one (`ttl_final`).
   * Until a message's timer is armed, readers check its TTL themselves (`live`).
   */
  private async loadFinalTtls(): Promise<void> {
    for await (const { dir, ids } of this.h.store.groups('done')) {
      for (const id of ids) {
        try {
          const msg = JSON.parse(await fs.promises.readFile(path.join(dir, id, 'msg'), 'utf8')) as Message;
          if (msg.ttl_final === true) this.watchTtl(id, msg.expires_at);
        } catch {
          // gone meanwhile, or unreadable: the dashboard shows it
        }
      }
    }
  }

  /** A message entered que by any path: watch its TTL. */
  noticeQueued(entry: QueEntry): void {
    this.watchTtl(entry.id, entry.pull?.e);
  }

  /** Does a finished message go at its own TTL (`ttl_final`), whatever the cleaner's limits? */
  keepsOwnTtl(state: State, id: string): boolean {
    try {
      return this.h.store.readMsg(state, id).ttl_final === true;
    } catch {
      return false;
    }
  }

  /** A message left err by a path outside this module (an operator's delete or a clean). */
  forgetDead(id: string): void {
    this.dead.delete(id);
  }

  /** A leased message was removed by an operator: stop its timer. */
  forgetLease(id: string): void {
    this.leaseEnds.delete(id);
  }

  // ───────────────────────────── commands ─────────────────────────────

  /** The pull commands that make or hand out messages need a pull queue: a script would compete for them. */
  private needPull(): void {
    if (!this.h.isPull()) throw new RqError('RQ_NOT_PULL', `queue ${this.h.name} runs a script; external workers cannot use it`);
  }

  /** publish; `allocated` is told the new id before the commit. */
  async publish(arg: Record<string, unknown>, allocated?: Allocated): Promise<{ id: string; ext_id: string | null }> {
    this.needPull();
    const f = publishFields(arg);
    const msg = await this.createMessage(f, allocated);
    return { id: msg.msg_id, ext_id: msg.ext_id ?? null };
  }

  /**
   * lease: up to `count` ready messages, in que order. With `wait_ms` and none ready,
   * wait for one (FIFO among waiters); `waiter` names the wait for `cancel_wait`.
   */
  lease(arg: Record<string, unknown>, conn?: RpcConnection): Promise<PulledView[]> {
    this.needPull();
    const owner = optString(arg, 'owner');
    if (owner === undefined || owner === '') throw bad("lacking 'owner' field");
    // No TTR given: each message's own (`ttr_ms`), else `default_ttr_ms`, else none.
    const ttrMs = optMs(arg, 'ttr_ms');
    const defaultTtrMs = optMs(arg, 'default_ttr_ms');
    const count = optNumber(arg, 'count', { min: 1, integer: true }) ?? 1;
    if (count > MAX_LEASE_COUNT) throw bad(`'count' must be at most ${MAX_LEASE_COUNT}`);
    const waitMs = optMs(arg, 'wait_ms') ?? 0;
    const token = optString(arg, 'waiter');
    return this.endDueLeases().then(() => this.leaseOrWait({ owner, ttrMs, defaultTtrMs }, count, waitMs, token, conn));
  }

  /**
   * The lazy check (spec/rqms.md §10): a lease whose end has come is ended before a lease
   * looks for ready messages, so a message is there again from the very instant its lease
   * runs out, not only once its timer's commit is done.
   */
  private async endDueLeases(): Promise<void> {
    const due = this.leaseEnds.takeDue(Date.now());
    await Promise.all(due.map(({ id }) => this.h.locks.exclusive(id, () => this.endLease(id, 'expired')).catch((e: unknown) => this.leaseNotEnded(id, e))));
  }

  private leaseOrWait(who: Lessee, count: number, waitMs: number, token: string | undefined, conn?: RpcConnection): Promise<PulledView[]> {
    const taken = this.takeReady(who, count);
    if (taken.length > 0 || waitMs === 0) return this.leased(taken);
    if (token !== undefined && this.cancelled.has(token)) return Promise.resolve([]);
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
          const at = this.waiters.indexOf(w);
          if (at >= 0) this.waiters.splice(at, 1);
          resolve(got);
          return true;
        },
      };
      w.timer = setTimeout(() => w.settle([]), Math.min(waitMs, MAX_TIMER_MS));
      this.waiters.push(w);
      conn?.setIdleTimeout(waitMs + 60_000);
      // The client went away: its wait ends, and a lease made for it in the race is handed back.
      conn?.onClose(() => {
        w.gone = true;
        w.settle([]);
      });
    });
  }

  /** cancel_wait: end the waits named `waiter` with no message. */
  cancelWait(arg: Record<string, unknown>): number {
    const token = optString(arg, 'waiter');
    if (token === undefined) throw bad("lacking 'waiter' field");
    // A wait named after its cancel (the cancel overtook it) answers empty at once.
    this.cancelled.set(token, Date.now() + CANCELLED_MS);
    for (const [t, until] of this.cancelled) if (until < Date.now()) this.cancelled.delete(t);
    const hit = this.waiters.filter((w) => w.token === token);
    for (const w of hit) w.settle([]);
    return hit.length;
  }

  /** Serve waiters, first come first served, while messages are ready (a commit, a due timer, a requeue, a resume). */
  wake(): void {
    while (this.waiters.length > 0 && this.h.isUp()) {
      const w = this.waiters[0]!;
      const taken = this.takeReady(w.who, 1);
      if (taken.length === 0) return;
      // Out of the list with its time limit stopped: from here only the lease answers it.
      this.waiters.shift();
      clearTimeout(w.timer);
      void this.leased(taken).then(async (jobs) => {
        if (!w.gone && w.settle(jobs)) return;
        // Answered meanwhile (the client left): hand the leases back.
        for (const job of jobs) await this.h.locks.exclusive(job.id, () => this.endLease(job.id, 'refund')).catch(() => undefined);
      });
    }
  }

  /** The leases that were made; one that failed is logged (its message stays in que). */
  private async leased(taken: Array<Promise<PulledView>>): Promise<PulledView[]> {
    const out: PulledView[] = [];
    for (const r of await Promise.allSettled(taken)) {
      if (r.status === 'fulfilled') out.push(r.value);
      else this.h.log.error({ err: coerceError(r.reason).message }, 'a lease failed');
    }
    return out;
  }

  /** Start leases of up to `count` ready messages: taken out of the list at once, each committed in turn. */
  private takeReady(who: Lessee, count: number): Array<Promise<PulledView>> {
    const out: Array<Promise<PulledView>> = [];
    if (!this.h.isUp()) return out;
    const now = Date.now();
    const picked: QueEntry[] = [];
    for (const e of this.h.que.readyEntries()) {
      if (picked.length >= count) break;
      if (this.h.locks.isBusy(e.id)) continue;
      if (e.pull?.e !== undefined && e.pull.e <= now) continue; // expiring: the TTL timer takes it
      picked.push(e);
    }
    for (const e of picked) {
      this.h.que.remove(e.id);
      out.push(this.h.locks.exclusive(e.id, () => this.leaseOne(e, who)));
    }
    return out;
  }

  /** que → run for a lease; `entry` is already out of the list (back in it if the commit fails). */
  private async leaseOne(entry: QueEntry, { owner, ttrMs, defaultTtrMs }: Lessee): Promise<PulledView> {
    const { store, que } = this.h;
    let msg: Message;
    try {
      msg = store.readMsg('que', entry.id);
    } catch (e) {
      // Gone (deleted by hand meanwhile), or unreadable: never back at the head, where it would block every lease.
      if (store.exists('que', entry.id)) {
        this.h.log.error({ msg_id: entry.id, err: coerceError(e).message }, 'unreadable message moved to err');
        await store.move(entry.id, 'que', 'err', { status: 'UNREADABLE MESSAGE - MOVING TO ERR' });
        this.h.counted({ to: 'err' }, entry.id);
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
    this.h.runs.add(entry.id, msg, leaseText(lease, msg));
    try {
      await store.lease(entry.id, msg);
    } catch (e) {
      this.h.runs.delete(entry.id);
      if (store.exists('que', entry.id)) que.insert(entry);
      throw e;
    }
    this.armTtr(entry.id, lease.until);
    const view = this.view('run', msg);
    // A lease that ends as it starts (TTR 0, RQMS time <= 0) is back in que before the answer, so the next lease sees it.
    if (lease.until !== null && lease.until <= Date.now()) await this.endLease(entry.id, 'expired');
    return view;
  }

  /** ack: the message goes to done with `status`, its external id forgotten. */
  ack(arg: Record<string, unknown>): Promise<{ id: string }> {
    this.needPull();
    const id = this.resolve(refOf(arg));
    const rev = optNumber(arg, 'rev', { integer: true });
    const status = optString(arg, 'status') ?? 'acknowledged';
    const from = arg['from'] ?? ['que', 'run', 'err'];
    if (!Array.isArray(from)) throw bad("'from' must be an array of states");
    return this.h.locks.exclusive(id, async () => {
      const state = this.h.stateOf(id);
      if (state === undefined || !from.includes(state) || (state !== 'que' && state !== 'run' && state !== 'err')) {
        throw new RqError('RQ_NOT_FOUND', 'msg not found');
      }
      const msg = this.current(state, id);
      if (rev !== undefined && (msg.rev ?? 0) !== rev) throw new RqError('RQ_STALE', `msg ${id} is at rev ${msg.rev ?? 0}, not ${rev}`);
      // msg is moved as it is: a leased one keeps its last lease as history, and no file is rewritten.
      await this.h.store.move(id, state, 'done', { status });
      this.left(state, id);
      this.h.counted({ to: 'done' }, id);
      if (msg.ext_scope !== 'server') this.forgetExtId('done', msg);
      return { id };
    });
  }

  /** nack: a lease ends now (or after `delay_ms`); `refund` undoes the lease as if it never was. */
  nack(arg: Record<string, unknown>): Promise<{ id: string; state: State }> {
    this.needPull();
    const id = this.resolve(refOf(arg));
    const refund = arg['refund'] === true;
    const delayMs = optMs(arg, 'delay_ms') ?? 0;
    return this.h.locks.exclusive(id, async () => {
      if (this.h.stateOf(id) !== 'run' || !this.h.runs.get(id)?.msg.lease) throw new RqError('RQ_NOT_IN_STATE', 'msg is not leased');
      return { id, state: await this.endLease(id, refund ? 'refund' : 'fail', delayMs) };
    });
  }

  /** touch: the lease now ends `ttr_ms` from now. */
  touch(arg: Record<string, unknown>): Promise<{ until: number }> {
    this.needPull();
    const id = this.resolve(refOf(arg));
    const ttrMs = optMs(arg, 'ttr_ms');
    if (ttrMs === undefined) throw bad("lacking 'ttr_ms' field");
    const rev = optNumber(arg, 'rev', { integer: true });
    return this.h.locks.exclusive(id, async () => {
      const run = this.h.runs.get(id);
      if (!run?.msg.lease) throw new RqError('RQ_NOT_IN_STATE', 'msg is not leased');
      if (rev !== undefined && (run.msg.rev ?? 0) !== rev) throw new RqError('RQ_STALE', `msg ${id} is at rev ${run.msg.rev ?? 0}, not ${rev}`);
      const until = Date.now() + ttrMs;
      const msg: Message = { ...run.msg, lease: { ...run.msg.lease, until } };
      await this.h.store.rewrite('run', id, { msg });
      run.msg = msg;
      this.h.runs.add(id, msg, leaseText(msg.lease!, msg));
      this.armTtr(id, until);
      return { until };
    });
  }

  /** set: upsert by external id (RQMS PUT). */
  async set(arg: Record<string, unknown>): Promise<{ id: string; created: boolean }> {
    this.needPull();
    const f = publishFields(arg);
    if (f.extId === undefined) throw bad("lacking 'ext_id' field");
    const extId = f.extId;
    for (let attempt = 0; attempt < 3; attempt++) {
      const id = this.findExt(extId);
      // Made by a publish or set that has not committed yet: set it once it has.
      if (id !== undefined) await this.creating.get(id);
      if (id === undefined) {
        try {
          const msg = await this.createMessage(f);
          return { id: msg.msg_id, created: true };
        } catch (e) {
          if (e instanceof RqError && e.code === 'RQ_DUPLICATE') continue; // made meanwhile: set it
          throw e;
        }
      }
      const done = await this.h.locks.exclusive(id, async () => {
        const state = this.h.stateOf(id);
        if (state !== 'que' && state !== 'run' && state !== 'err') return false;
        const msg = this.current(state, id);
        const now = Date.now();
        applyFields(msg, f, now);
        msg.rev = (msg.rev ?? 0) + 1;
        delete msg.lease;
        delete msg.dead;
        delete msg.dead_at;
        await this.requeue(state, id, msg, f.payload ? { files: { [PAYLOAD]: f.payload } } : {});
        return true;
      });
      if (done) return { id, created: false };
    }
    throw new RqError('RQ_IO', `cannot set ${extId}: it keeps changing`);
  }


  /**
   * finish: a message's outcome, in any state before a final one (Workq complete and
   * fail): with `success` to done, else to err, `result` kept as `attach/result`, the
   * lease dropped. A failure with `max_fails` retries left (and leases left) goes back to
   * que in its place instead, `fails` + 1. `result_wait` calls get the outcome.
   */
  finish(arg: Record<string, unknown>): Promise<{ id: string; state: State }> {
    this.needPull();
    const id = this.resolve(refOf(arg));
    const success = optBoolean(arg, 'success');
    if (success === undefined) throw bad("lacking 'success' field");
    const result = optBase64(arg, 'result') ?? Buffer.alloc(0);
    const status = optString(arg, 'status') ?? (success ? 'completed' : 'failed');
    return this.h.locks.exclusive(id, async () => {
      const state = this.h.stateOf(id);
      const msg = this.live(state, id);
      if (state === 'done' || state === 'err') throw new RqError('RQ_NOT_IN_STATE', `msg ${id} is already finished`);
      if (state !== 'que' && state !== 'run') throw new RqError('RQ_NOT_FOUND', 'msg not found');
      const now = Date.now();
      delete msg.lease;
      msg.rev = (msg.rev ?? 0) + 1;
      if (!success) msg.fails = (msg.fails ?? 0) + 1;
      if (!success && (msg.fails ?? 0) < (msg.max_fails ?? 0) && !isSpent(msg)) {
        // Retried: ready now (a scheduled one too), in its place.
        if (dueMs(msg) > now) msg.due = now / 1000;
        await this.requeue(state, id, msg);
        return { id, state: 'que' };
      }
      msg.success = success;
      const to = success ? 'done' : 'err';
      await this.h.store.move(id, state, to, { msg, files: { [RESULT]: result }, status });
      this.left(state, id);
      this.h.counted({ to }, id);
      if (msg.ext_scope !== 'server') this.forgetExtId(to, msg);
      if (msg.ttl_final === true) this.watchTtl(id, msg.expires_at);
      this.finished(id, { state: to, success, result: result.toString('base64') });
      return { id, state: to };
    });
  }

  /**
   * result_wait: a finished message's outcome, at once or when it comes within `wait_ms`
   * (null when it does not). With `lease_grace`, a message leased when the time is up is
   * waited for until its lease ends (Workq `run`).
   */
  async resultWait(arg: Record<string, unknown>, conn?: RpcConnection): Promise<PullResult | null> {
    const id = this.resolve(refOf(arg));
    const waitMs = optMs(arg, 'wait_ms') ?? 0;
    const grace = optBoolean(arg, 'lease_grace') ?? false;
    const now = await this.h.locks.exclusive(id, async () => {
      const state = this.h.stateOf(id);
      const msg = this.live(state, id);
      return state === 'done' || state === 'err' ? this.outcome(state, msg) : msg;
    });
    if (!('msg_id' in now)) return now;
    conn?.setIdleTimeout(waitMs + (grace && typeof now.ttr_ms === 'number' ? now.ttr_ms : 0) + 60_000);
    return this.awaitOutcome(id, waitMs, grace, conn);
  }

  /** Wait for `finished` on message `id` (see resultWait); null when the time is up or the client left. */
  private awaitOutcome(id: string, waitMs: number, grace: boolean, conn?: RpcConnection): Promise<PullResult | null> {
    return new Promise((resolve) => {
      const waiters = this.resultWaiters.get(id) ?? new Set();
      this.resultWaiters.set(id, waiters);
      let timer: NodeJS.Timeout | undefined;
      const answer = (r: PullResult | null): void => {
        clearTimeout(timer);
        waiters.delete(answer);
        if (waiters.size === 0 && this.resultWaiters.get(id) === waiters) this.resultWaiters.delete(id);
        resolve(r);
      };
      let leaseGrace = grace;
      const timeUp = (): void => {
        const until = leaseGrace ? this.h.runs.get(id)?.msg.lease?.until : undefined;
        leaseGrace = false;
        if (typeof until === 'number' && until > Date.now()) {
          timer = setTimeout(timeUp, Math.min(until - Date.now(), MAX_TIMER_MS));
          return;
        }
        // A finish committing right now answers this wait: let it first.
        if (this.h.locks.isBusy(id)) void this.h.locks.settled(id).then(() => answer(null));
        else answer(null);
      };
      waiters.add(answer);
      timer = setTimeout(timeUp, Math.min(waitMs, MAX_TIMER_MS));
      conn?.onClose(() => answer(null));
    });
  }

  /** remove: a message gone for good, in any state (Workq delete); its external id is free. */
  remove(arg: Record<string, unknown>): Promise<{ id: string }> {
    this.needPull();
    const id = this.resolve(refOf(arg));
    return this.h.locks.exclusive(id, async () => {
      const state = this.h.stateOf(id);
      this.live(state, id);
      if (!isRemovable(state) || !this.discard(state, id)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
      return { id };
    });
  }

  /** list: ready (in lease order) or delayed messages (in the same order), from `offset`, at most `limit`; without payloads (peek has them). */
  list(arg: Record<string, unknown>): PulledView[] {
    const which = arg['which'];
    if (which !== 'ready' && which !== 'delayed') throw bad(`'which' must be "ready" or "delayed", got ${JSON.stringify(which)}`);
    const offset = optNumber(arg, 'offset', { min: 0, integer: true }) ?? 0;
    const limit = optNumber(arg, 'limit', { min: 1, max: MAX_LEASE_COUNT, integer: true }) ?? 100;
    const entries = which === 'ready' ? this.h.que.readyEntries() : this.h.que.delayedInReadyOrder();
    const out: PulledView[] = [];
    let skip = offset;
    for (const e of entries) {
      if (out.length >= limit) break;
      if (skip > 0) {
        skip--;
        continue;
      }
      try {
        out.push(this.view('que', this.h.store.readMsg('que', e.id), false));
      } catch {
        // taken meanwhile
      }
    }
    return out;
  }

  /**
   * peek: without `ref` the message the next lease would take; with it, that message in
   * any state but done (with `all`, done too), once no command is changing it (as the
   * engine's get_message).
   */
  async peek(arg: Record<string, unknown>): Promise<PulledView | null> {
    const ref = extIdOf(arg, 'ref');
    if (ref === undefined) {
      const now = Date.now();
      for (const e of this.h.que.readyEntries()) {
        if (e.pull?.e !== undefined && e.pull.e <= now) continue;
        try {
          return this.view('que', this.h.store.readMsg('que', e.id));
        } catch {
          // taken meanwhile
        }
      }
      return null;
    }
    const id = this.findExt(ref) ?? (isSafeId(ref) ? ref : undefined);
    if (id === undefined) return null;
    await this.h.locks.settled(id);
    const state = this.h.stateOf(id);
    if (!isRemovable(state) || (state === 'done' && arg['all'] !== true)) return null;
    try {
      const msg = this.current(state, id);
      // Past its TTL, its timer not yet run: gone already for a reader.
      return pastTtl(state, msg) ? null : this.view(state, msg);
    } catch {
      return null;
    }
  }

  /** Counts; `evicted` and `started` (epoch ms) are this process's, since it started. */
  stats(): { ready: number; delayed: number; leased: number; dead: number; evicted: number; started: number } {
    const ready = this.h.que.readySize;
    return { ready, delayed: this.h.que.size - ready, leased: this.h.runs.leased(), dead: this.dead.size, evicted: this.evicted, started: this.started };
  }

  /** purge_ready: remove every ready message; delayed, leased and dead ones stay. */
  purgeReady(): number {
    this.needPull();
    let n = 0;
    for (const e of [...this.h.que.readyEntries()]) {
      if (this.h.locks.isBusy(e.id)) continue;
      if (this.discard('que', e.id)) n++;
    }
    return n;
  }

  /** respawn: up to `limit` dead letters, oldest first, to the tail of que with 1 try and a TTL (`ttl_ms`, 0 = none). */
  async respawn(arg: Record<string, unknown>): Promise<number> {
    this.needPull();
    const limit = optNumber(arg, 'limit', { min: 1, integer: true }) ?? 1;
    const ttlMs = optMs(arg, 'ttl_ms') ?? 0;
    let n = 0;
    for (const id of [...this.oldestDead(limit)]) {
      const moved = await this.h.locks.exclusive(id, async () => {
        if (this.h.stateOf(id) !== 'err') return false;
        const msg = this.h.store.readMsg('err', id);
        const now = Date.now();
        delete msg.dead;
        delete msg.dead_at;
        msg.tries = 1;
        if (ttlMs > 0) msg.expires_at = now + ttlMs;
        else delete msg.expires_at;
        msg.due = now / 1000;
        // The tail: a rank, if it has one, moves with it.
        if (msg.rank !== undefined) msg.rank = now;
        msg.rev = (msg.rev ?? 0) + 1;
        await this.requeue('err', id, msg, { status: 'respawned' });
        return true;
      });
      if (moved) n++;
    }
    return n;
  }

  /** dead_letter: size and oldest dead letter; with `delete`, first remove up to that many, oldest first. */
  deadLetter(arg: Record<string, unknown>): { size: number; head: PulledView | null; deleted: number } {
    this.needPull();
    const limit = optNumber(arg, 'delete', { min: 0, integer: true }) ?? 0;
    let deleted = 0;
    for (const id of [...this.oldestDead(limit)]) {
      if (!this.h.locks.isBusy(id) && this.discard('err', id)) deleted++;
    }
    let head: PulledView | null = null;
    for (const id of this.dead.keys()) {
      try {
        head = this.view('err', this.h.store.readMsg('err', id));
        break;
      } catch {
        // gone meanwhile
      }
    }
    return { size: this.dead.size, head, deleted };
  }

  // ───────────────────────────── internals ─────────────────────────────

  private *oldestDead(limit: number): Generator<string> {
    let n = 0;
    for (const id of this.dead.keys()) {
      if (n++ >= limit) return;
      yield id;
    }
  }

  /** A new pull message: payload, external id (claimed first, fsynced with the commit), the pull fields. */
  private async createMessage(f: PublishFields, allocated?: Allocated): Promise<Message> {
    const { extId } = f;
    const input: MessageInput = { dest: this.h.name, src: f.src, ...f.params };
    const files = f.payload ? { [PAYLOAD]: f.payload } : {};
    const index = this.indexOf(f.extScope);
    let claimed: string | undefined;
    let settle = (): void => undefined;
    try {
      return await this.h.create(
        input,
        (msg) => {
          applyFields(msg, f, Date.now());
          msg.rev = 1;
        },
        files,
        (msg) =>
          extId === undefined
            ? undefined
            : {
                content: markerContent(this.h.name, msg.msg_id, extId),
                dir: index.dir,
                claim: (file) => {
                  if (!index.claim(extId, file, (held) => this.stillHolds(held, f.extScope))) {
                    const where = f.extScope === 'server' ? 'this server' : `queue ${this.h.name}`;
                    throw new RqError('RQ_DUPLICATE', `a message with id ${extId} is already in ${where}`);
                  }
                  claimed = msg.msg_id;
                  this.creating.set(claimed, new Promise((r) => (settle = r)));
                },
              },
        allocated,
      );
    } finally {
      if (claimed !== undefined) this.creating.delete(claimed);
      settle();
    }
  }

  private indexOf(scope: unknown): ExtIdIndex {
    return scope === 'server' ? this.serverIds : this.queueIds;
  }

  /**
   * The message of this queue holding external id `extId`: in any state when the id is
   * the server's (held until removal), else not done (an ack lets a queue's id go).
   */
  private findExt(extId: string): string | undefined {
    for (const [index, scope] of [[this.queueIds, undefined], [this.serverIds, 'server']] as const) {
      const target = index.lookup(extId);
      if (target !== undefined && target.queue === this.h.name && this.stillHolds(target, scope)) return target.id;
    }
    return undefined;
  }

  /**
   * Does the message an index entry names still hold its id? One of this queue: while it
   * is being made or changed, or is there (not done, for a queue-scope id). One of another
   * queue (server scope): the link count says its marker is there (maybe in a message being
   * made), so while that queue is (a deleted queue's directory is renamed away).
   */
  private stillHolds(held: ExtIdTarget, scope: 'server' | undefined): boolean {
    if (!isSafeId(held.id)) return false;
    if (held.queue !== this.h.name) return scope === 'server' && isValidQueueName(held.queue) && fs.existsSync(queueLayout(this.h.layout.root, held.queue).dir);
    if (this.creating.has(held.id) || this.h.locks.isBusy(held.id)) return true;
    const state = this.h.stateOf(held.id);
    return state !== undefined && state !== 'relayed' && (state !== 'done' || scope === 'server');
  }

  /** An external id, else a short id. */
  private resolve(ref: string): string {
    const id = this.findExt(ref) ?? (isSafeId(ref) ? ref : undefined);
    if (id === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return id;
  }

  /** The message as it is now: a leased one from memory, else its file. */
  private current(state: State, id: string): Message {
    const run = state === 'run' ? this.h.runs.get(id) : undefined;
    if (run) return { ...run.msg };
    try {
      return this.h.store.readMsg(state, id);
    } catch (e) {
      throw new RqError('RQ_NOT_FOUND', 'msg not found', { cause: e });
    }
  }

  /** The message as it is now, if it is there and its TTL has not passed (else RQ_NOT_FOUND; a passed one is removed now). */
  private live(state: State | undefined, id: string): Message {
    if (!isRemovable(state)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    const msg = this.current(state, id);
    if (this.expiredNow(state, msg)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return msg;
  }

  /** A finished message's outcome, from its msg and `attach/result`. */
  private outcome(state: 'done' | 'err', msg: Message): PullResult {
    let result = '';
    try {
      result = fs.readFileSync(path.join(this.h.layout.msgDir(state, msg.msg_id), 'attach', RESULT)).toString('base64');
    } catch {
      // none: failed by its lease running out, or finished by an ack
    }
    return { state, success: msg.success ?? state === 'done', result };
  }

  /** Hand a message's outcome to every `result_wait` on it. */
  private finished(id: string, r: PullResult): void {
    for (const answer of [...(this.resultWaiters.get(id) ?? [])]) answer(r);
  }

  /** Forget a message in memory as it leaves `state` (the store has moved it). */
  private left(state: State, id: string): void {
    this.expiries.delete(id);
    if (state === 'que') this.h.que.remove(id);
    if (state === 'run') {
      this.forgetLease(id);
      this.h.runs.delete(id);
    }
    if (state === 'err') {
      this.forgetDead(id);
      this.h.counted({ from: 'err' }, id);
    }
    if (state === 'done') this.h.counted({ from: 'done' }, id);
  }

  /** The message, now in `state`, lets its external id go. */
  private forgetExtId(state: State, msg: Message): void {
    if (typeof msg.ext_id === 'string') this.indexOf(msg.ext_scope).release(msg.ext_id, path.join(this.h.layout.msgDir(state, msg.msg_id), EXT_ID_FILE));
  }

  /** Remove a message for good (TTL, purge, dead-letter delete, remove): into the trash, emptied soon after. */
  private discard(state: RemovableState, id: string): boolean {
    let msg: Message | undefined;
    try {
      msg = this.current(state, id);
    } catch {
      msg = undefined;
    }
    if (!this.h.store.discard(state, id)) return false;
    this.left(state, id);
    // After the rename: a crash before it keeps the message and its entry together.
    if (typeof msg?.ext_id === 'string') this.indexOf(msg.ext_scope).release(msg.ext_id, path.join(this.h.layout.trashEntry(state, id), EXT_ID_FILE));
    this.trashTimer ??= setTimeout(() => {
      this.trashTimer = undefined;
      emptyTrash(this.h.layout).catch((e: unknown) => this.h.log.warn({ err: coerceError(e).message }, 'cannot empty the trash'));
    }, 1_000);
    return true;
  }

  /** End a lease (TTR end, nack or refund): back to que, or to err as dead when spent. */
  private async endLease(id: string, how: 'expired' | 'fail' | 'refund', delayMs = 0): Promise<State> {
    const run = this.h.runs.get(id);
    if (!run?.msg.lease) return 'run';
    // A touch that committed while this TTR end waited its turn moved the end: the lease goes on.
    const until = run.msg.lease.until;
    if (how === 'expired' && (until === null || until > Date.now())) {
      this.armTtr(id, until);
      return 'run';
    }
    this.forgetLease(id);
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
      await this.h.store.move(id, 'run', 'err', { msg, status: `dead: ${why} with no tries left` });
      this.h.runs.delete(id);
      this.dead.set(id, now);
      this.h.counted({ to: 'err' }, id);
      if (!msg.ttl_final) this.expiries.delete(id);
      this.finished(id, { state: 'err', success: false, result: '' });
      return 'err';
    } else if (delayMs > 0) {
      msg.due = (now + delayMs) / 1000;
    } else if (msg.requeue === 'tail') {
      msg.due = now / 1000;
      if (msg.rank !== undefined) msg.rank = now;
    }
    await this.requeue('run', id, msg);
    return 'que';
  }

  /**
   * Back into que with `msg` saved in the same commit (one in que is rewritten where it
   * is): forgotten where it was, listed in its place, and waiters woken.
   */
  private async requeue(state: 'que' | 'run' | 'err', id: string, msg: Message, opts: Omit<MoveOptions, 'msg'> = {}): Promise<void> {
    if (state === 'que') await this.h.store.rewrite('que', id, { ...opts, msg });
    else {
      await this.h.store.enqueue(id, state, { ...opts, msg });
      this.left(state, id);
    }
    this.h.queued(entryFromMessage(msg));
  }

  private armTtr(id: string, until: number | null): void {
    if (until === null) this.leaseEnds.delete(id);
    else this.leaseEnds.set(id, until);
  }

  /** A lease's end has come (its timer): end it in its turn. */
  private endLeaseLater(id: string): void {
    void this.h.locks.exclusive(id, () => this.endLease(id, 'expired')).catch((e: unknown) => this.leaseNotEnded(id, e));
  }

  /** A TTR end failed: for a full disk it is tried again a second later; else the lease stays in run until a restart. */
  private leaseNotEnded(id: string, e: unknown): void {
    if (isNoSpace(e) && this.h.runs.get(id)?.msg.lease) return this.armTtr(id, Date.now() + NO_SPACE_RETRY_MS);
    this.h.log.error({ msg_id: id, err: coerceError(e).message }, 'cannot end a lease; it stays in run until restart');
  }

  private watchTtl(id: string, at: unknown): void {
    if (typeof at === 'number') this.expiries.set(id, at);
  }

  /**
   * A TTL has ended: remove the message, waiting or leased, or finished when its TTL is
   * final (a dead letter without that has no TTL). One that was not finished (and not
   * ephemeral) counts as evicted.
   */
  private expire(id: string, at: number): void {
    void this.h.locks.exclusive(id, async () => {
      const state = this.h.stateOf(id);
      if (!isRemovable(state)) return;
      let msg: Message;
      try {
        msg = this.current(state, id);
      } catch {
        return;
      }
      if (msg.expires_at === at && this.expiredNow(state, msg)) this.h.log.info({ msg_id: id, state }, 'message expired (TTL) and removed');
    });
  }

  /**
   * A message whose TTL has passed is removed now (its timer, or the lazy check of a read
   * before the timer has run); one not finished (nor ephemeral) counts as evicted.
   * Returns whether it was removed.
   */
  private expiredNow(state: RemovableState, msg: Message): boolean {
    if (!pastTtl(state, msg)) return false;
    if (!this.discard(state, msg.msg_id)) return false;
    if ((state === 'que' || state === 'run') && msg.ephemeral !== true) this.evicted++;
    return true;
  }

  /** What the pull commands show of a message. */
  private view(state: State, msg: Message, withPayload = true): PulledView {
    let payload: string | null = null;
    try {
      if (withPayload) payload = fs.readFileSync(path.join(this.h.layout.msgDir(state, msg.msg_id), 'attach', PAYLOAD)).toString('base64');
    } catch {
      // no payload: an RQ-native message
    }
    return {
      queue: this.h.name,
      id: msg.msg_id,
      ext_id: typeof msg.ext_id === 'string' ? msg.ext_id : null,
      state,
      payload,
      params: PARAM_KEYS.map((k) => msg[k] ?? null),
      src: msg.src ?? null,
      created_ms: idTimeMs(msg.msg_id) ?? 0,
      due_ms: dueMs(msg),
      expires_at: typeof msg.expires_at === 'number' ? msg.expires_at : null,
      tries: typeof msg.tries === 'number' ? msg.tries : null,
      count: msg.count ?? 0,
      max_count: msg.max_count ?? 15,
      rev: msg.rev ?? 0,
      priority: typeof msg.priority === 'number' ? msg.priority : 0,
      dead: msg.dead === true,
      lease: msg.lease ?? null,
      ttr_ms: typeof msg.ttr_ms === 'number' ? msg.ttr_ms : null,
      fails: msg.fails ?? 0,
      max_fails: msg.max_fails ?? 0,
      success: typeof msg.success === 'boolean' ? msg.success : null,
      scheduled_at: typeof msg.scheduled_at === 'number' ? msg.scheduled_at : null,
      ttl: typeof msg.ttl === 'string' ? msg.ttl : null,
      max_attempts: typeof msg.max_attempts === 'number' ? msg.max_attempts : null,
    };
  }
}

