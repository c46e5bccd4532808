/**
 * What the dashboard, `/q.json` and `/metrics` know about rq-mgr and each queue, asked
 * in parallel with a short timeout, so one hung queue process costs a page at most
 * PROBE_TIMEOUT_MS and never stalls the others. A queue that does not answer is a
 * probe with `up: false` and a reason, never an exception. The admin state comes from
 * the flag files (spec/rq.md §1.11), which the web may read: the combined status a
 * queue answers hides PAUSE and DOWN behind SCRIPTERROR, and the buttons need them.
 */
import fs from 'node:fs';
import { isPlainObject } from '../domain/message.js';
import { STATES, type State } from '../domain/states.js';
import type { StatsReply } from '../queue/queue-stats.js';
import { livePid, runningPid } from '../supervisor/pid-file.js';
import { queueLayout } from '../store/layout.js';
import type { Gateway } from './gateway.js';

/** How long a probe waits for one RPC answer. */
export const PROBE_TIMEOUT_MS = 2_000;

export type Counts = Record<State, number>;
export type AdminStatus = 'UP' | 'PAUSE' | 'DOWN';

export interface QueueProbe {
  name: string;
  /** The queue process answered `ping`. */
  up: boolean;
  /** The combined status it answered (§1.11), or `DOWN` when it did not answer. */
  status: string;
  /** From the flag files: DOWN wins over PAUSE. */
  admin: AdminStatus;
  /** The pid in `queue.pid` when that process is alive. */
  pid: number | null;
  uptime: number | null;
  counts: Counts | null;
  /** Only when asked for (the `stats` command, beyond RQ). */
  stats: StatsReply | null;
  /** Why a queue that is not up is down: `not running` or `not answering`. */
  error: string | undefined;
}

export interface MgrProbe {
  up: boolean;
  pid: number | null;
  uptime: number | null;
  /** RQ's version rq-mgr answers (`1.18.3`). */
  version: string | null;
}

export function adminStatus(gw: Gateway, name: string): AdminStatus {
  const q = queueLayout(gw.root, name);
  if (fs.existsSync(q.downFlag)) return 'DOWN';
  return fs.existsSync(q.pauseFlag) ? 'PAUSE' : 'UP';
}

function firstOf(reply: unknown): unknown {
  return Array.isArray(reply) ? reply[0] : undefined;
}

function countsOf(reply: unknown): Counts | null {
  if (!isPlainObject(reply)) return null;
  return Object.fromEntries(STATES.map((s) => [s, typeof reply[s] === 'number' ? reply[s] : 0])) as Counts;
}

function statsOf(reply: unknown): StatsReply | null {
  return isPlainObject(reply) && typeof reply['done'] === 'number' && isPlainObject(reply['run_seconds']) ? (reply as unknown as StatsReply) : null;
}

/** Ask one queue for its ping, status, uptime and counts (and stats), all at once. */
export async function probeQueue(gw: Gateway, name: string, opts: { stats?: boolean } = {}): Promise<QueueProbe> {
  const ask = (command: string, arg?: unknown): Promise<unknown> => gw.queue(name, command, arg, PROBE_TIMEOUT_MS);
  const [ping, status, uptime, counts, stats] = await Promise.all([
    ask('ping'),
    ask('status'),
    ask('uptime'),
    ask('num_messages', {}),
    opts.stats ? ask('stats') : Promise.resolve(null),
  ]);
  const pid = livePid(queueLayout(gw.root, name).pidFile, '[rq-que]') ?? null;
  const up = firstOf(ping) === 'pong';
  const s = firstOf(status);
  const u = firstOf(uptime);
  return {
    name,
    up,
    status: up && typeof s === 'string' ? s : 'DOWN',
    admin: adminStatus(gw, name),
    pid,
    uptime: up && typeof u === 'number' ? u : null,
    counts: up ? countsOf(counts) : null,
    stats: up ? statsOf(stats) : null,
    error: up ? undefined : pid === null ? 'not running' : 'not answering',
  };
}

/** Every queue rq-mgr knows (custom ones first), probed in parallel; null if rq-mgr does not answer. */
export async function probeQueues(gw: Gateway, opts: { stats?: boolean } = {}): Promise<QueueProbe[] | null> {
  const names = await gw.queueNames();
  return names && Promise.all(names.map((n) => probeQueue(gw, n, opts)));
}

export async function probeMgr(gw: Gateway): Promise<MgrProbe> {
  const [ping, uptime, version] = await Promise.all(['ping', 'uptime', 'version'].map((c) => gw.mgr(c, undefined, PROBE_TIMEOUT_MS)));
  const up = firstOf(ping) === 'pong';
  const u = firstOf(uptime);
  const v = firstOf(version);
  return {
    up,
    pid: runningPid(gw.root) ?? null,
    uptime: up && typeof u === 'number' ? u : null,
    version: typeof v === 'string' ? v : null,
  };
}
