/**
 * What the front doors know of each queue: its `stats` (pid, combined status, admin
 * state as the flag files say, uptime, counts, schedule, counters), asked with a short
 * timeout, so one hung process costs at most PROBE_TIMEOUT_MS and never stalls the
 * others. A queue is up when that reply arrived; one that does not answer is a probe with
 * `up: false`, never an exception. Queues served by one process (a host serves many) are
 * asked together: `host_stats` answers for all of them, so thousands of queues cost one
 * RPC per process (the web's overview, `/q.json` and `/metrics`, lmstfy's `/metrics`).
 */
import fs from 'node:fs';
import type { QueueStatus } from '../rpc/queue-api.js';
import { queueLayout, type RootLayout } from '../store/layout.js';
import type { QueueClient } from './queue-client.js';
import { isRefusal } from './refusal.js';

/** How long a probe waits for a queue's answer. */
export const PROBE_TIMEOUT_MS = 2_000;

/** A queue that answered: its `stats`. */
export type LiveQueue = { name: string; up: true } & QueueStatus;
/** A queue as probed. */
export type QueueProbe = LiveQueue | { name: string; up: false };

/** Where the queues are, and the client that asks them. */
export interface Prober {
  root: RootLayout;
  queues: QueueClient;
}

/** Ask one queue for its `stats`. */
export async function probeQueue(p: Prober, name: string): Promise<QueueProbe> {
  const reply = await p.queues.probe(name, 'stats', {}, PROBE_TIMEOUT_MS);
  if (reply === undefined || isRefusal(reply)) return { name, up: false };
  return { name, up: true, ...reply };
}

/**
 * These queues, probed in parallel. Queues whose pid files name the same process are
 * asked together: `host_stats` of one of them answers for all the queues named. A queue
 * the reply leaves out, or whose process does not answer it, is asked its own `stats`.
 */
export async function probeNamed(p: Prober, names: readonly string[]): Promise<QueueProbe[]> {
  const byPid = new Map<string, string[]>();
  for (const name of names) {
    const pid = readPid(queueLayout(p.root, name).pidFile);
    byPid.set(pid, [...(byPid.get(pid) ?? []), name]);
  }
  const found = new Map<string, QueueProbe>();
  await Promise.all(
    [...byPid].map(async ([pid, group]) => {
      if (pid === '' || group.length < 2) return;
      const reply = await p.queues.probe(group[0]!, 'host_stats', { queues: group }, PROBE_TIMEOUT_MS);
      if (reply === undefined || isRefusal(reply)) return;
      for (const name of group) {
        const status = reply[name];
        if (status !== undefined) found.set(name, { name, up: true, ...status });
      }
    }),
  );
  return Promise.all(names.map((n) => Promise.resolve(found.get(n) ?? probeQueue(p, n))));
}

/** A pid file's text (a few bytes, read at once: thousands cost milliseconds), '' when there is none. */
function readPid(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}
