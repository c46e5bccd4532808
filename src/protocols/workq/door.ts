/**
 * What the Workq handlers share: the door's own state and the ways to a job.
 *
 * A Workq job is a pull message in the rq queue of its name: the client's UUID is its
 * external id with server scope (unique across every queue and held until the job is
 * removed, `queues/.ids/`), and its TTL is final (the result lives until it). The order
 * of a Workq queue is the pull order: priority, then rank (add and run jobs: below every instant;
 * scheduled jobs: their time), then the sort key (created, to the microsecond, then the
 * id). Max-attempts 0 ("unlimited") is stored as max_count 255, Workq's hard cap.
 *
 * What is this door's own: the names used only by `lease` (`config/workq.names`, one per
 * line), the connection count, the start time, and the evicted count (the sum of the
 * queue processes' counts, from this process's start on).
 *
 * A queue in a token-protected lmstfy namespace that the section's `queues` patterns do
 * not name is closed to this door (door-access.ts): `mayTouch` says no to it, and
 * `locate` does not find its jobs.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { RqError } from '../../domain/errors.js';
import type { Logger } from '../../lib/logger.js';
import { queueDirNames, type RootLayout } from '../../store/layout.js';
import type { ProtocolContext } from '../context.js';
import { doorAccess } from '../door-access.js';
import type { PublishInput, PullClient, PullStats } from '../pull-client.js';
import type { WorkqConfig } from './config.js';

/** Add and run jobs sort before every scheduled job of their priority. */
export const UNSCHEDULED_RANK = Number.MIN_SAFE_INTEGER;
/** Max-attempts 0: Workq's hard cap of 255 attempts. */
export const ATTEMPT_CAP = 255;

/** A job by its UUID: its queue and its short id there. */
export interface JobTarget {
  queue: string;
  id: string;
}

export class WorkqDoor {
  readonly client: PullClient;
  readonly log: Logger;
  readonly started = Date.now();
  /** Says whether a queue is open to this door (door-access.ts). */
  readonly mayTouch: (name: string) => boolean;
  /** The names used only by `lease`, and the file that keeps them. */
  readonly leaseNames: Set<string>;
  readonly namesFile: string;
  /** Fired with a queue's name when this door made it (a waiting lease may want it). */
  readonly made = new EventEmitter();
  /** Connections open now. */
  clients = 0;
  private readonly root: RootLayout;
  private readonly evicted = new EvictedCount(this.started);

  constructor(ctx: ProtocolContext, options: WorkqConfig) {
    this.client = ctx.client;
    this.log = ctx.log;
    this.root = ctx.root;
    this.namesFile = path.join(ctx.root.configDir, 'workq.names');
    this.leaseNames = new Set(readNames(this.namesFile));
    this.made.setMaxListeners(0);
    this.mayTouch = doorAccess(ctx.namespaces, options.queues);
  }

  /** The evicted count `inspect server` shows, from this door's start. */
  get evictedTotal(): number {
    return this.evicted.total;
  }

  /** A queue or lease-only name this door can see. */
  known(name: string): boolean {
    return this.mayTouch(name) && (this.client.exists(name) || this.leaseNames.has(name));
  }

  /** Every queue and lease-only name this door can see, sorted. */
  allNames(): string[] {
    return [...new Set([...queueDirNames(this.root), ...this.leaseNames])].filter(this.mayTouch).sort();
  }

  /** A queue's figures, its evicted count noted. */
  async stats(name: string): Promise<PullStats> {
    const s = await this.client.stats(name);
    // A name used only by lease has no process (started 0) to count for.
    if (s.started > 0) this.evicted.note(name, s);
    return s;
  }

  /** Note every queue process's evicted count now (one that does not answer is skipped). */
  async noteAllStats(): Promise<void> {
    await Promise.all(queueDirNames(this.root).map((q) => this.stats(q).catch(() => undefined)));
  }

  /** Make a job of this door: the UUID as a server-scoped external id, the TTL final, in Workq's order. */
  async publish(name: string, id: string, input: Omit<PublishInput, 'src'>): Promise<void> {
    const isNew = !this.client.exists(name);
    await this.client.publish(name, { src: 'workq', ext_id: id, ext_scope: 'server', ttl_final: true, requeue: 'place', sort_key: sortKey(id), ...input });
    if (isNew) this.made.emit('queue', name);
  }

  /** A job by its UUID, in a queue this door may touch: its queue and short id. */
  locate(id: string): JobTarget | undefined {
    const target = this.client.findServerId(id);
    return target !== undefined && this.mayTouch(target.queue) ? target : undefined;
  }

  /** As `locate`, or RQ_NOT_FOUND. */
  find(id: string): JobTarget {
    const target = this.locate(id);
    if (target === undefined) throw new RqError('RQ_NOT_FOUND', 'msg not found');
    return target;
  }
}

/** The sort key after rank: created (µs, fixed width), then the id. */
function sortKey(id: string): string {
  const micros = Math.round((performance.timeOrigin + performance.now()) * 1000);
  return `${String(micros).padStart(17, '0')} ${id}`;
}

/** The evicted count `inspect server` shows, from this door's start: the queue processes' counts, carried over their restarts. */
class EvictedCount {
  private readonly since: number;
  private readonly seen = new Map<string, { started: number; evicted: number; base: number }>();
  private carried = 0;

  constructor(since: number) {
    this.since = since;
  }

  note(queue: string, s: PullStats): void {
    const prev = this.seen.get(queue);
    if (prev && prev.started === s.started) {
      prev.evicted = s.evicted;
      return;
    }
    if (prev) this.carried += prev.evicted - prev.base;
    // A process older than this door: what it counted before is not ours.
    this.seen.set(queue, { started: s.started, evicted: s.evicted, base: !prev && s.started < this.since ? s.evicted : 0 });
  }

  get total(): number {
    let n = this.carried;
    for (const q of this.seen.values()) n += q.evicted - q.base;
    return n;
  }
}

function readNames(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter((n) => n !== '');
  } catch {
    return [];
  }
}
