/**
 * The web process's bulk jobs (the dashboard's bulk actions, routes/bulk.ts): each one
 * operation on a list of messages of one queue, run in the background once confirmed, as
 * the queue's `bulk` command in batches of BULK_BATCH, LANES batches at a time. A job is
 * kept in memory, with its counts (done, skipped, failed, and the first failures'
 * reasons), while it runs and for KEEP_MS after it ends, so its progress page can show
 * it; at most MAX_RUNNING run at once. Each job leaves two lines in the web's log: who
 * asked (the Basic auth user, or `-`), the queue, the op and how many; then how it went.
 */
import crypto from 'node:crypto';
import { isRefusal } from '../client/refusal.js';
import { BULK_BATCH, type BulkOp } from '../domain/bulk-ops.js';
import { coerceError } from '../domain/errors.js';
import type { State } from '../domain/states.js';
import type { Logger } from '../lib/logger.js';
import type { Gateway } from './gateway.js';
import { webError } from './web-errors.js';

/** A finished job is kept this long (1 hour), then forgotten. */
export const KEEP_MS = 60 * 60 * 1000;
/** Jobs running at once, over every queue; one more is refused with a 503. */
export const MAX_RUNNING = 4;
/** Batches of one job in flight at once. */
const LANES = 2;
/** Failures kept with their reason, per job (the rest are counted only). */
const KEPT_FAILURES = 20;

export interface BulkSpec {
  queue: string;
  op: BulkOp;
  state: State;
  ids: readonly string[];
  /** `move`: the queue that gets the messages. */
  dest?: string;
  /** Who asked: the Basic auth user, or `-`. */
  user: string;
}

export interface BulkJob {
  readonly id: string;
  readonly spec: BulkSpec;
  readonly total: number;
  done: number;
  skipped: number;
  failed: number;
  /** The first failures, with their reasons. */
  readonly failures: Array<{ id: string; error: string }>;
  /** Epoch ms. */
  readonly startedAt: number;
  endedAt: number | undefined;
}

/** What a job's `.json` shows. */
export function jobView(job: BulkJob): Record<string, unknown> {
  const { queue, op, state, dest, user } = job.spec;
  return {
    id: job.id,
    queue,
    op,
    state,
    ...(dest === undefined ? {} : { dest }),
    user,
    total: job.total,
    done: job.done,
    skipped: job.skipped,
    failed: job.failed,
    failures: job.failures,
    started_at: job.startedAt,
    ended_at: job.endedAt ?? null,
    finished: job.endedAt !== undefined,
  };
}

export class BulkJobs {
  private readonly jobs = new Map<string, BulkJob>();

  private readonly gw: Gateway;
  private readonly log: Logger;

  constructor(gw: Gateway, log: Logger) {
    this.gw = gw;
    this.log = log;
  }

  /** Start a job in the background; a 503 when MAX_RUNNING already run. */
  start(spec: BulkSpec): BulkJob {
    this.prune();
    const running = [...this.jobs.values()].filter((j) => j.endedAt === undefined).length;
    if (running >= MAX_RUNNING) throw webError('RQ_UNAVAILABLE', `${running} bulk actions are running, the most at once; try again when one has ended`);
    const job: BulkJob = { id: crypto.randomBytes(8).toString('hex'), spec, total: spec.ids.length, done: 0, skipped: 0, failed: 0, failures: [], startedAt: Date.now(), endedAt: undefined };
    this.jobs.set(job.id, job);
    const { queue, op, state, dest, user } = spec;
    this.log.info({ job: job.id, user, queue, op, state, ...(dest === undefined ? {} : { dest }), messages: job.total }, 'bulk action started');
    void this.run(job);
    return job;
  }

  /** A job of queue `queue` that is kept, or undefined. */
  get(queue: string, id: string): BulkJob | undefined {
    this.prune();
    const job = this.jobs.get(id);
    return job?.spec.queue === queue ? job : undefined;
  }

  private async run(job: BulkJob): Promise<void> {
    const { queue, op, state, dest, ids, user } = job.spec;
    let next = 0;
    // Lanes of batches: the queue stages one batch while it commits another.
    const lane = async (): Promise<void> => {
      for (let at = next; at < ids.length; at = next) {
        next += BULK_BATCH;
        const batch = ids.slice(at, at + BULK_BATCH);
        const reply = await this.gw.queues
          .send(queue, 'bulk', { op, state, ids: [...batch], ...(dest === undefined ? {} : { dest }) }, { timeoutMs: 120_000 })
          .catch((e: unknown) => coerceError(e).message);
        if (typeof reply === 'string' || isRefusal(reply)) {
          const error = typeof reply === 'string' ? reply : reply[1];
          this.failed(job, batch.map((id) => ({ id, error })));
          continue;
        }
        job.done += reply[1].done;
        job.skipped += reply[1].skipped;
        this.failed(job, reply[1].failed);
      }
    };
    await Promise.all(Array.from({ length: LANES }, lane));
    job.endedAt = Date.now();
    this.log.info(
      { job: job.id, user, queue, op, messages: job.total, done: job.done, skipped: job.skipped, failed: job.failed, ms: job.endedAt - job.startedAt },
      'bulk action ended',
    );
  }

  private failed(job: BulkJob, failures: ReadonlyArray<{ id: string; error: string }>): void {
    job.failed += failures.length;
    job.failures.push(...failures.slice(0, Math.max(0, KEPT_FAILURES - job.failures.length)));
  }

  private prune(): void {
    const before = Date.now() - KEEP_MS;
    for (const [id, job] of this.jobs) if (job.endedAt !== undefined && job.endedAt < before) this.jobs.delete(id);
  }
}
