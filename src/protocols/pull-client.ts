/**
 * The pull front doors' one way to the queues (docs/pull-queues.md):
 * the queue processes' pull commands through the typed client (client/queue-client.ts).
 * Front doors hold no queue state; they parse, call this, and render.
 *
 * It also owns what no single queue process can do:
 * - a queue used for the first time is made by rq-mgr (`create_pull_queue`) before the
 *   publish that needs it;
 * - a lease over several queues takes, without waiting, from the first listed queue that
 *   has a ready message (listed order is priority); when none has one it waits on all of
 *   them at once, keeps the first message that comes, cancels the other waits, and hands
 *   back (refunds) any message a cancelled wait leased in the race, so none is lost;
 * - a queue process that is restarting is asked again for a few seconds (client/call.ts:
 *   a command is sent again only when that cannot do it twice; a publish whose reply
 *   was lost is settled by the id it announced), and a wait goes on across its restart.
 *
 * A queue that does not exist reads as empty: it has no ready message, no dead letter.
 * Every refusal is an RqError with the queue's code (`["fail", text, code]` on the wire);
 * a queue process that cannot be asked is RQ_UNAVAILABLE or RQ_OUTCOME_UNKNOWN.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { RESTART_WAIT_MS } from '../client/call.js';
import { MgrClient } from '../client/mgr-client.js';
import { QueueClient } from '../client/queue-client.js';
import { Refused, isRefusal, refusalCode } from '../client/refusal.js';
import { RqError } from '../domain/errors.js';
import { extIdLinkName, isLinkedEntry, parseMarker, type ExtIdTarget } from '../domain/ext-id-names.js';
import { PROTOCOL_NAMES } from '../domain/main-config.js';
import { isValidQueueName } from '../domain/names.js';
import type { State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import type { LeaseArg, PublishArg, PullResult, PullStats, PulledView } from '../rpc/queue-api.js';
import { queueLayout, type RootLayout } from '../store/layout.js';

/** A message as the pull commands show it. */
export type PulledJob = PulledView;
export type { PullResult, PullStats };

/** A publish (see PublishArg), its payload as bytes: stored as `attach/payload`, byte for byte. */
export type PublishInput = Omit<PublishArg, 'payload'> & { payload?: Buffer };

export interface LeaseOptions {
  /** Who holds the lease (shown on the dashboard): 'lmstfy', 'cloudq', 'rqms', 'workq'. */
  owner: string;
  /** The lease ends after this many ms (TTR); null = never; undefined = each message's own `ttr_ms`, else `default_ttr_ms`, else never. */
  ttr_ms: number | null | undefined;
  default_ttr_ms?: number;
  /** At most this many messages (1..1000). */
  count: number;
  /** When none is ready: wait this long for one (one message then). 0 = do not wait. */
  wait_ms: number;
  /** Aborting ends a wait early (the HTTP client went away); nothing stays leased for it (what was leased is refunded, and [] returned). */
  signal?: AbortSignal;
  /** Make listed queues that do not exist yet, so a wait sees their first publish. */
  create?: boolean;
}

const NO_STATS: PullStats = { ready: 0, delayed: 0, leased: 0, dead: 0, evicted: 0, started: 0 };
const CALL_TIMEOUT_MS = 30_000;
/** A lease's TTR, the longest a `result_wait` with grace may outlast its wait (Workq's TTR limit is 24 h). */
const DAY_MS = 86_400_000;

export class PullClient {
  private readonly root: RootLayout;
  private readonly log: Logger;
  private readonly queues: QueueClient;
  private readonly mgr: MgrClient;

  constructor(root: RootLayout, log: Logger) {
    this.root = root;
    this.log = log;
    this.queues = new QueueClient(root, { timeoutMs: CALL_TIMEOUT_MS });
    this.mgr = new MgrClient(root);
  }

  /** The queue and short id of the message holding a server-wide external id (`ext_scope` server), while it exists: the index's entry, read. */
  findServerId(extId: string): ExtIdTarget | undefined {
    const entry = path.join(this.root.serverIdsDir, extIdLinkName(extId));
    if (!isLinkedEntry(fs.lstatSync(entry, { throwIfNoEntry: false }))) return undefined;
    let text: string;
    try {
      text = fs.readFileSync(entry, 'utf8');
    } catch {
      return undefined;
    }
    const m = parseMarker(text);
    return m !== undefined && m.ext_id === extId ? { queue: m.queue, id: m.id } : undefined;
  }

  /** The queue's directory and config are there (it may be restarting). */
  exists(queue: string): boolean {
    return isValidQueueName(queue) && fs.existsSync(queueLayout(this.root, queue).configFile);
  }

  /**
   * Make a pull queue unless it exists (rq-mgr `create_pull_queue`; asking again once it
   * exists is harmless), recording the door that made it (a publish's `src`, a lease's owner).
   */
  async ensure(queue: string, by: string | undefined): Promise<void> {
    if (this.exists(queue)) return;
    const door = PROTOCOL_NAMES.find((d) => d === by);
    const reply = await this.mgr.send('create_pull_queue', door === undefined ? queue : `${queue} ${door}`, { timeoutMs: CALL_TIMEOUT_MS, repeatable: true });
    if (!isRefusal(reply)) return;
    if (refusalCode(reply) === 'RQ_NO_SPACE') throw new RqError('RQ_NO_SPACE', reply[1]);
    throw new RqError('RQ_UPSTREAM', `rq-mgr did not make queue ${queue}: ${JSON.stringify(reply)}`);
  }

  /**
   * A command through the typed client: a refusal is thrown as an RqError with the
   * queue's code, a queue that is DOWN as `queue <q> is DOWN`. A queue process that does
   * not answer (a restart) is waited for as client/call.ts says, then RQ_UNAVAILABLE, or
   * RQ_OUTCOME_UNKNOWN for a change that may have been made.
   */
  private async call<T>(queue: string, command: (queues: QueueClient) => Promise<T>): Promise<T> {
    try {
      return await command(this.queues);
    } catch (e) {
      if (e instanceof Refused && e.code === 'RQ_QUEUE_DOWN') throw new RqError('RQ_QUEUE_DOWN', `queue ${queue} is DOWN`);
      throw e;
    }
  }

  async publish(queue: string, input: PublishInput): Promise<{ id: string; ext_id: string | null }> {
    await this.ensure(queue, input.src);
    return this.call(queue, (c) => c.publish(queue, publishArg(input)));
  }

  /** Upsert by external id (RQMS PUT): a new message, or the old one with this payload, a new rev and no lease. */
  async set(queue: string, extId: string, input: PublishInput): Promise<{ id: string; created: boolean }> {
    await this.ensure(queue, input.src);
    return this.call(queue, (c) => c.set(queue, { ...publishArg(input), ext_id: extId }));
  }

  /** Lease messages from the listed queues (see the file comment); [] when none came. */
  async lease(queues: readonly string[], o: LeaseOptions): Promise<PulledJob[]> {
    const arg: LeaseArg = { owner: o.owner, ttr_ms: o.ttr_ms, default_ttr_ms: o.default_ttr_ms };
    if (o.create) for (const q of queues) await this.ensure(q, o.owner);
    const got: PulledJob[] = [];
    for (const q of queues) {
      if (got.length >= o.count || !this.exists(q)) continue;
      got.push(...(await this.call(q, (c) => c.lease(q, { ...arg, count: o.count - got.length }))));
    }
    const jobs = got.length > 0 || o.wait_ms <= 0 || o.signal?.aborted ? got : await this.waitForOne(queues.filter((q) => this.exists(q)), arg, o);
    // The client went away meanwhile: nothing stays leased for it.
    if (!o.signal?.aborted) return jobs;
    for (const job of jobs) await this.refund(job);
    return [];
  }

  /** Wait on every queue at once; the first message wins, the other waits are cancelled and any race winner refunded. */
  private async waitForOne(queues: string[], arg: LeaseArg, o: LeaseOptions): Promise<PulledJob[]> {
    if (queues.length === 0) return [];
    const waiter = randomUUID();
    const deadline = Date.now() + o.wait_ms;
    let winner: PulledJob | undefined;
    let cancelled = false;
    const cancelAll = (): void => {
      if (cancelled) return;
      cancelled = true;
      for (const q of queues) void this.call(q, (c) => c.cancelWait(q, waiter)).catch(() => undefined);
    };
    o.signal?.addEventListener('abort', cancelAll, { once: true });
    const waitOn = async (q: string): Promise<void> => {
      // A wait goes on across a restart of the queue process, until the deadline or a cancel.
      while (!cancelled && Date.now() < deadline) {
        const left = deadline - Date.now();
        let jobs: PulledJob[];
        try {
          jobs = await this.call(q, (c) => c.lease(q, { ...arg, count: 1, wait_ms: left, waiter }, { timeoutMs: left + CALL_TIMEOUT_MS }));
        } catch (e) {
          if (e instanceof RqError && e.code === 'RQ_UNAVAILABLE') continue;
          throw e;
        }
        for (const job of jobs) {
          if (winner === undefined && !o.signal?.aborted) {
            winner = job;
            cancelAll();
          } else {
            await this.refund(job);
          }
        }
        if (jobs.length > 0) return;
      }
    };
    // Every wait runs to its end (a failed one must not leave the others' messages unread),
    // then any still registered is cancelled; a message one of them leased is refunded.
    const results = await Promise.allSettled(queues.map(waitOn));
    cancelAll();
    o.signal?.removeEventListener('abort', cancelAll);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (!winner && failed) throw failed.reason;
    return winner ? [winner] : [];
  }

  /** Hand back a lease nobody will use: tries and count as before it, same place. */
  private async refund(job: PulledJob): Promise<void> {
    try {
      await this.call(job.queue, (c) => c.nack(job.queue, { ref: job.id, refund: true }));
    } catch (e) {
      this.log.warn({ queue: job.queue, msg_id: job.id, err: (e as Error).message }, 'cannot hand back a lease; it ends at its TTR');
    }
  }

  /**
   * Acknowledge: the message moves to done (kept for the cleaner and the dashboard) with
   * `status`, and its external id is forgotten. `ref` is an external id or a short id.
   * `rev` must equal the message's rev (RQ_STALE otherwise); `from` limits the states it
   * may be in (default que, run, err). RQ_NOT_FOUND when it is not there.
   */
  async ack(queue: string, ref: string, o: { rev?: number; from?: State[]; status?: string } = {}): Promise<{ id: string }> {
    if (!this.exists(queue)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return this.call(queue, (c) => c.ack(queue, { ref, ...o }));
  }

  /** End a lease early: back to que (refund: as if never leased; else the TTR-expiry rule, after `delay_ms`). */
  async nack(queue: string, ref: string, o: { refund?: boolean; delay_ms?: number } = {}): Promise<void> {
    await this.call(queue, (c) => c.nack(queue, { ref, ...o }));
  }

  /** Extend a lease to now + ttr_ms; returns the new end (epoch ms). */
  async touch(queue: string, ref: string, ttrMs: number, rev?: number): Promise<{ until: number }> {
    return this.call(queue, (c) => c.touch(queue, { ref, ttr_ms: ttrMs, ...(rev !== undefined ? { rev } : {}) }));
  }

  /** Without `ref`: the message the next lease would take (null if none). With it: that message in any state but done (with `all`, done too). */
  async peek(queue: string, ref?: string, o: { all?: boolean } = {}): Promise<PulledJob | null> {
    if (!this.exists(queue)) return null;
    return this.call(queue, (c) => c.peek(queue, ref === undefined ? {} : { ref, ...o }));
  }

  /**
   * A message's outcome: done with `success`, or err, `result` kept as `attach/result`.
   * A failure with retries left (`max_fails`) goes back to que instead (state 'que').
   * RQ_NOT_IN_STATE when it is finished already, RQ_NOT_FOUND when it is not there.
   */
  async finish(queue: string, ref: string, o: { success: boolean; result: Buffer; status?: string }): Promise<{ id: string; state: State }> {
    if (!this.exists(queue)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return this.call(queue, (c) => c.finish(queue, { ref, success: o.success, result: o.result.toString('base64'), ...(o.status ? { status: o.status } : {}) }));
  }

  /**
   * Wait until `deadline` (epoch ms) for a message's outcome; null when none came. With
   * `leaseGrace`, a message leased when the time is up is waited for until its lease
   * ends. The wait goes on across a restart of the queue process.
   */
  async resultWait(queue: string, ref: string, deadline: number, o: { leaseGrace?: boolean; signal?: AbortSignal } = {}): Promise<PullResult | null> {
    if (!this.exists(queue)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    for (;;) {
      const left = Math.max(0, deadline - Date.now());
      try {
        const wait = { timeoutMs: left + CALL_TIMEOUT_MS + DAY_MS, ...(o.signal ? { signal: o.signal } : {}) };
        return await this.call(queue, (c) => c.resultWait(queue, { ref, wait_ms: left, lease_grace: o.leaseGrace === true }, wait));
      } catch (e) {
        if (o.signal?.aborted) return null;
        // The queue process went away mid-wait: ask the new one, with the time that is left.
        if (!(e instanceof RqError && e.code === 'RQ_UNAVAILABLE') || Date.now() >= deadline + RESTART_WAIT_MS) throw e;
      }
    }
  }

  /** Remove a message for good, in any state; RQ_NOT_FOUND when it is not there. */
  async remove(queue: string, ref: string): Promise<void> {
    if (!this.exists(queue)) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    await this.call(queue, (c) => c.remove(queue, ref));
  }

  /** Ready (in lease order) or delayed messages (in the same order), from `offset`, at most `limit`. */
  async list(queue: string, which: 'ready' | 'delayed', offset: number, limit: number): Promise<PulledJob[]> {
    if (!this.exists(queue)) return [];
    return this.call(queue, (c) => c.list(queue, { which, offset, limit }));
  }

  async stats(queue: string): Promise<PullStats> {
    if (!this.exists(queue)) return NO_STATS;
    return this.call(queue, (c) => c.pullStats(queue));
  }

  /** Remove every ready message (delayed, leased and dead ones stay); returns how many. */
  async purgeReady(queue: string): Promise<number> {
    if (!this.exists(queue)) return 0;
    return this.call(queue, (c) => c.purgeReady(queue));
  }

  /** Move up to `limit` dead letters, oldest first, to the tail of the ready messages with 1 try and a TTL (0 = none). */
  async respawn(queue: string, limit: number, ttlMs: number): Promise<number> {
    if (!this.exists(queue)) return 0;
    return this.call(queue, (c) => c.respawn(queue, { limit, ttl_ms: ttlMs }));
  }

  /** The dead letter: its size and oldest message; with `delete`, first remove up to `limit` oldest. */
  async deadLetter(queue: string, o: { delete?: number } = {}): Promise<{ size: number; head: PulledJob | null; deleted: number }> {
    if (!this.exists(queue)) return { size: 0, head: null, deleted: 0 };
    return this.call(queue, (c) => c.deadLetter(queue, o));
  }
}

function publishArg(input: PublishInput): PublishArg {
  const { payload, ...rest } = input;
  return { ...rest, ...(payload !== undefined ? { payload: payload.toString('base64') } : {}) };
}
