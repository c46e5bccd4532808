/**
 * What the dashboard, `/q.json`, `/metrics` and the queue pages know about rq-mgr and
 * each queue, asked in parallel with a short timeout, so one hung queue process costs a
 * page at most PROBE_TIMEOUT_MS and never stalls the others. A queue costs one RPC: its
 * `stats` reply carries its pid, combined status (spec/rq.md §1.11), admin state (the
 * flag files as the queue itself reads them), uptime, counts, the schedule it runs and
 * its counters. A queue is up when that reply arrived; one that does not answer is a
 * probe with `up: false`, never an exception.
 */
import { isPlainObject } from '../domain/message.js';
import type { ScheduleStatus } from '../queue/cron.js';
import type { CleanerConfig } from '../domain/retention.js';
import type { State } from '../domain/states.js';
import type { AdminStatus } from '../queue/state.js';
import type { StatsReply } from '../queue/queue-stats.js';
import type { DiskUsage } from '../store/disk-usage.js';
import type { Gateway } from './gateway.js';

/** How long a probe waits for one RPC answer. */
export const PROBE_TIMEOUT_MS = 2_000;

export type Counts = Record<State, number>;

/** A queue's `stats` reply: what the web shows of a queue that answers. */
export interface QueueStatus extends StatsReply {
  pid: number;
  /** The combined status (§1.11): UP, PAUSE, DOWN or SCRIPTERROR. */
  status: string;
  /** The flag files alone: DOWN wins over PAUSE. */
  admin: AdminStatus;
  uptime: number;
  counts: Counts;
  /** The schedule the queue runs (its live config). */
  schedule: ScheduleStatus[];
  /** Beyond RQ: how long done, relayed and err messages are kept. */
  cleaner: CleanerConfig;
  /** Beyond RQ: the queue's last disk usage measurement, null before the first. */
  disk: DiskUsage | null;
}

/** A queue that answered: its `stats`. */
export type LiveQueue = { name: string; up: true } & QueueStatus;
/** A queue as probed. */
export type QueueProbe = LiveQueue | { name: string; up: false };

export interface MgrProbe {
  /** rq-mgr answered `uptime`. */
  up: boolean;
  uptime: number | null;
  /** RQ's version rq-mgr answers (`1.18.3`), when asked for. */
  version: string | null;
}

/** Ask one queue for its `stats`. */
export async function probeQueue(gw: Gateway, name: string): Promise<QueueProbe> {
  const reply = await gw.queue(name, 'stats', undefined, PROBE_TIMEOUT_MS);
  if (!isPlainObject(reply) || typeof reply['pid'] !== 'number' || typeof reply['status'] !== 'string') return { name, up: false };
  return { name, up: true, ...(reply as unknown as QueueStatus) };
}

/** Every queue rq-mgr knows (custom ones first), probed in parallel; null if rq-mgr does not answer. */
export async function probeQueues(gw: Gateway): Promise<QueueProbe[] | null> {
  const names = await gw.queueNames();
  return names && Promise.all(names.map((n) => probeQueue(gw, n)));
}

/** rq-mgr's `uptime` (its answer is the liveness test) and, when asked for, its `version`. */
export async function probeMgr(gw: Gateway, opts: { version?: boolean } = {}): Promise<MgrProbe> {
  const ask = async (command: string): Promise<unknown> => {
    const reply = await gw.mgr(command, undefined, PROBE_TIMEOUT_MS);
    return Array.isArray(reply) ? reply[0] : undefined;
  };
  const [uptime, version] = await Promise.all([ask('uptime'), opts.version ? ask('version') : undefined]);
  return {
    up: typeof uptime === 'number',
    uptime: typeof uptime === 'number' ? uptime : null,
    version: typeof version === 'string' ? version : null,
  };
}
