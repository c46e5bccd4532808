/**
 * The web process's Prometheus registry for `/metrics` (routes/ops.ts), its own (never
 * prom-client's global one). The queue series are not kept in this process: each scrape
 * asks rq-mgr and every queue (one `host_stats` RPC per host process, one `stats` per queue
 * process of its own: queue-info.ts), in parallel with a short timeout, and the metrics'
 * collect() functions copy those answers. One scrape makes one round of questions, however
 * many metrics read it. Most counters are the queues' `stats` (cumulative since the
 * queue began to be served by its process), so they reset to 0 when that process
 * restarts, which Prometheus's rate() and increase() treat as a counter reset; done, err
 * and the wait and run histograms are the queues' `totals`, kept in their history files
 * across restarts (queue/history.ts). `rq_queue_restarts_total` comes from rq-mgr and resets when rq-mgr
 * restarts. The web process's own default metrics (process_*, nodejs_*) come from
 * prom-client, its body budget's (rq_web_request_body_*) from lib/body-budget.ts, and what
 * its Workq connections hold (rq_workq_held_bytes) from protocols/workq/connection.ts.
 * This module (and prom-client) is loaded at the first scrape.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { isRefusal } from '../client/refusal.js';
import { STATES } from '../domain/states.js';
import { bodyBudget } from '../lib/body-budget.js';
import { workqHeldBytes } from '../protocols/workq/connection.js';
import { PROBE_TIMEOUT_MS, type Gateway } from './gateway.js';
import type { LiveQueue, QueueProbe } from '../client/queue-probe.js';
import { probeMgr, probeQueues, type MgrProbe } from './queue-info.js';

interface Scrape {
  mgr: MgrProbe;
  queues: QueueProbe[];
  /** rq-mgr's `restarts`: per queue, and of the web, after a death. */
  restarts: { queues: Record<string, number>; web: number };
}

async function scrape(gw: Gateway): Promise<Scrape> {
  const [mgr, queues, restarts] = await Promise.all([probeMgr(gw), probeQueues(gw), gw.mgr.probe('restarts', '', PROBE_TIMEOUT_MS)]);
  const counts: Scrape['restarts'] = restarts === undefined || isRefusal(restarts) ? { queues: {}, web: 0 } : restarts;
  return { mgr, queues: queues ?? [], restarts: counts };
}

interface RunSeconds {
  queue: string;
  /** Cumulative counts by upper bound (`"0.1"` … `"+Inf"`). */
  buckets: Record<string, number>;
  sum: number;
  count: number;
}

/**
 * A histogram whose buckets, sum and count are given whole (a queue's cumulative
 * `stats`), not observed here; prom-client's Histogram can only observe. This object has
 * what a Registry reads of a metric (name, help, type, get, reset) and renders the series
 * a prom-client Histogram renders: `_bucket{le}` in bound order, `_sum`, `_count`.
 */
function givenHistogram(registry: Registry, name: string, help: string, source: () => Promise<RunSeconds[]>): void {
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    reset: (): void => undefined,
    async get() {
      const values = (await source()).flatMap(({ queue, buckets, sum, count }) => [
        ...Object.entries(buckets)
          .map(([le, value]) => ({ le, value, bound: le === '+Inf' ? Infinity : Number(le) }))
          .sort((a, b) => a.bound - b.bound)
          .map(({ le, value }) => ({ metricName: `${name}_bucket`, labels: { queue, le }, value })),
        { metricName: `${name}_sum`, labels: { queue }, value: sum },
        { metricName: `${name}_count`, labels: { queue }, value: count },
      ]);
      return { name, help, type: 'histogram', aggregator: 'sum', values };
    },
  };
  // The Registry's type admits only prom-client's own classes; it reads no more than this.
  registry.registerMetric(metric as unknown as Metric);
}

export function createMetrics(gw: Gateway): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // One scrape per round of collect() calls: they all start in the same tick.
  let pending: Promise<Scrape> | undefined;
  const current = (): Promise<Scrape> => {
    pending ??= scrape(gw).finally(() => setImmediate(() => (pending = undefined)));
    return pending;
  };
  /** The queues that answered, with their `stats`. */
  const up = (s: Scrape): LiveQueue[] => s.queues.filter((q) => q.up);
  const registers = [registry];

  new Gauge({
    name: 'rq_queuemgr_up',
    help: 'Whether rq-mgr answers on its socket (1) or not (0).',
    registers,
    async collect() {
      this.set((await current()).mgr.up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'rq_queue_up',
    help: 'Whether the queue process answers (1) or not (0).',
    labelNames: ['queue'],
    registers,
    async collect() {
      this.reset();
      for (const q of (await current()).queues) this.set({ queue: q.name }, q.up ? 1 : 0);
    },
  });
  new Gauge({
    name: 'rq_messages',
    help: 'Messages in each state (num_messages of the queue).',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      this.reset();
      for (const q of up(await current())) for (const state of STATES) this.set({ queue: q.name, state }, q.counts[state]);
    },
  });
  new Gauge({
    name: 'rq_disk_usage_bytes',
    help: "Disk blocks (st_blocks × 512) a state's messages take, as the queue last measured them (in the background, at most once a minute). Absent until the first measurement.",
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      this.reset();
      for (const q of up(await current())) {
        if (q.disk) for (const state of STATES) this.set({ queue: q.name, state }, q.disk.states[state].bytes);
      }
    },
  });
  const counter = (name: string, help: string, value: (q: LiveQueue) => number, since = 'Since the queue process started: resets when it restarts.'): void => {
    new Counter({
      name,
      help: `${help} ${since}`,
      labelNames: ['queue'],
      registers,
      async collect() {
        this.reset();
        for (const q of up(await current())) this.inc({ queue: q.name }, value(q));
      },
    });
  };
  counter('rq_messages_created_total', 'Messages created.', (q) => q.created);
  const kept = "Since the queue's history began: kept across restarts.";
  counter('rq_messages_done_total', 'Messages that reached done.', (q) => q.totals.done, kept);
  counter('rq_messages_err_total', 'Messages that reached err.', (q) => q.totals.err, kept);
  counter('rq_messages_relayed_total', 'Messages that reached relayed.', (q) => q.relayed);
  counter('rq_worker_spawn_failures_total', 'Runs whose worker could not be started.', (q) => q.spawn_failures);
  new Counter({
    name: 'rq_queue_restarts_total',
    help: 'Queue processes restarted by rq-mgr after an unexpected death, since rq-mgr started.',
    labelNames: ['queue'],
    registers,
    async collect() {
      this.reset();
      const s = await current();
      for (const q of s.queues) this.inc({ queue: q.name }, s.restarts.queues[q.name] ?? 0);
    },
  });
  new Counter({
    name: 'rq_web_restarts_total',
    help: 'Web processes restarted by rq-mgr after an unexpected death, since rq-mgr started.',
    registers,
    async collect() {
      this.reset();
      this.inc((await current()).restarts.web);
    },
  });
  new Gauge({
    name: 'rq_web_request_body_bytes',
    help: 'Bytes of request bodies the web process holds in memory now, for the web and the protocol front doors together.',
    registers,
    collect() {
      this.set(bodyBudget.inUse);
    },
  });
  new Gauge({
    name: 'rq_web_request_body_budget_bytes',
    help: 'The most bytes of request bodies the web process holds at once (RQ_WEB_BODY_BUDGET); a body beyond it is refused with 503.',
    registers,
    collect() {
      this.set(bodyBudget.max);
    },
  });
  new Counter({
    name: 'rq_web_request_body_refusals_total',
    help: 'Requests refused with 503 because their body did not fit in the body budget, since the web process started.',
    registers,
    collect() {
      this.reset();
      this.inc(bodyBudget.refusals);
    },
  });
  new Gauge({
    name: 'rq_workq_held_bytes',
    help: 'Bytes the Workq connections hold in memory now: commands received and not yet answered, and commands still arriving.',
    registers,
    collect() {
      this.set(workqHeldBytes());
    },
  });
  givenHistogram(
    registry,
    'rq_run_duration_seconds',
    `Run time of workers, from spawn to exit (of leases, to ack or finish). ${kept}`,
    async () => up(await current()).map((q) => ({ queue: q.name, ...q.totals.run_seconds })),
  );
  givenHistogram(
    registry,
    'rq_wait_duration_seconds',
    `Wait of messages, from ready (made, or due) to their run's start or lease. ${kept}`,
    async () => up(await current()).map((q) => ({ queue: q.name, ...q.totals.wait_seconds })),
  );
  return registry;
}

