/**
 * What the dashboard, `/q.json` and `/metrics` know about rq-mgr (its `uptime` and
 * version) and about every queue it keeps (probed as client/queue-probe.ts says), asked
 * with a short timeout, so one hung process costs a page at most PROBE_TIMEOUT_MS.
 */
import { probeNamed, type QueueProbe } from '../client/queue-probe.js';
import { PROBE_TIMEOUT_MS, type Gateway } from './gateway.js';

export interface MgrProbe {
  /** rq-mgr answered `uptime`. */
  up: boolean;
  uptime: number | null;
  /** RQ's version rq-mgr answers (`1.18.3`), when asked for. */
  version: string | null;
}

/** Every queue rq-mgr knows (custom ones first), probed (probeNamed); null if rq-mgr does not answer. */
export async function probeQueues(gw: Gateway): Promise<QueueProbe[] | null> {
  const names = await gw.queueNames();
  return names && probeNamed(gw, names);
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
