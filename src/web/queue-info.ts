/**
 * What the dashboard, `/q.json`, `/metrics` and the queue pages know about rq-mgr and
 * each queue, asked in parallel with a short timeout, so one hung queue process costs a
 * page at most PROBE_TIMEOUT_MS and never stalls the others. A queue costs one RPC: its
 * `stats` reply carries its pid, combined status (spec/rq.md §1.11), admin state (the
 * flag files as the queue itself reads them), uptime, counts, the schedule it runs and
 * its counters. A queue is up when that reply arrived; one that does not answer is a
 * probe with `up: false`, never an exception.
 */
import fs from 'node:fs';
import { isRefusal } from '../client/refusal.js';
import { queueLayout } from '../store/layout.js';
import type { QueueStatus } from '../rpc/queue-api.js';
import { PROBE_TIMEOUT_MS, type Gateway } from './gateway.js';

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

/** What a probe needs of the gateway (the lmstfy door's `/metrics` gives its own). */
export type Prober = Pick<Gateway, 'root' | 'queues'>;

/** Ask one queue for its `stats`. */
export async function probeQueue(gw: Prober, name: string): Promise<QueueProbe> {
  const reply = await gw.queues.probe(name, 'stats', {}, PROBE_TIMEOUT_MS);
  if (reply === undefined || isRefusal(reply)) return { name, up: false };
  return { name, up: true, ...reply };
}

/** Every queue rq-mgr knows (custom ones first), probed (probeNamed); null if rq-mgr does not answer. */
export async function probeQueues(gw: Gateway): Promise<QueueProbe[] | null> {
  const names = await gw.queueNames();
  return names && probeNamed(gw, names);
}

/**
 * These queues, probed in parallel. Queues whose pid files name the same process (a host
 * serves many) are asked together: `host_stats` of one of them answers for all the queues
 * named, so thousands of queues cost one RPC per process. A queue the reply leaves out, or
 * whose process does not answer it, is asked its own `stats`.
 */
export async function probeNamed(gw: Prober, names: readonly string[]): Promise<QueueProbe[]> {
  const byPid = new Map<string, string[]>();
  for (const name of names) {
    const pid = readPid(queueLayout(gw.root, name).pidFile);
    byPid.set(pid, [...(byPid.get(pid) ?? []), name]);
  }
  const found = new Map<string, QueueProbe>();
  await Promise.all(
    [...byPid].map(async ([pid, group]) => {
      if (pid === '' || group.length < 2) return;
      const reply = await gw.queues.probe(group[0]!, 'host_stats', { queues: group }, PROBE_TIMEOUT_MS);
      if (reply === undefined || isRefusal(reply)) return;
      for (const name of group) {
        const status = reply[name];
        if (status !== undefined) found.set(name, { name, up: true, ...status });
      }
    }),
  );
  return Promise.all(names.map((n) => Promise.resolve(found.get(n) ?? probeQueue(gw, n))));
}

/** A pid file's text (a few bytes, read at once: thousands cost milliseconds), '' when there is none. */
function readPid(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

/** rq-mgr's `uptime` (its answer is the liveness test) and, when asked for, its `version`. */
export async function probeMgr(gw: Gateway, opts: { version?: boolean } = {}): Promise<MgrProbe> {
  const [uptime, version] = await Promise.all([
    gw.mgr.probe('uptime', '', PROBE_TIMEOUT_MS).then((r) => r?.[0]),
    opts.version ? gw.mgr.probe('version', '', PROBE_TIMEOUT_MS).then((r) => r?.[0]) : undefined,
  ]);
  return {
    up: typeof uptime === 'number',
    uptime: typeof uptime === 'number' ? uptime : null,
    version: typeof version === 'string' ? version : null,
  };
}
