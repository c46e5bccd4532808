/**
 * The lmstfy door's `/metrics`, in Prometheus text (prom-client, a Registry of its own,
 * apart from the web's):
 *
 * - `lmstfy_published_jobs_total`, `lmstfy_consumed_jobs_total`, `lmstfy_acked_jobs_total`
 *   `{namespace,queue}`: jobs published (publish, each job of a bulk, republish), jobs
 *   delivered by consume (by the queue each came from), and acknowledgements asked
 *   (`DELETE …/job/:id` and republish; lmstfy answers 204 whether or not the job was
 *   there). Counted by this web process since it started, so they reset when it restarts.
 * - `lmstfy_request_duration_seconds{namespace,op}`: a histogram of the time from the
 *   request's arrival to its reply, for `op` publish, bulk_publish, republish, consume and
 *   ack, refusals included. Per namespace, not per queue, so that thousands of queues do
 *   not make hundreds of thousands of series. A consume's time includes its wait
 *   (`timeout`), hence the buckets up to 30 s.
 * - `lmstfy_rate_limited_requests_total{namespace,op}`: requests refused with 429.
 * - `lmstfy_queue_jobs{namespace,queue,state}`: jobs now `ready`, `delayed`, `inflight`
 *   and `dead` (the dead letter), for the queues this door has published to, consumed
 *   from or acknowledged in since the web process started, as their processes count
 *   them in memory (no directory is listed). A scrape asks the `stats` of those queues
 *   as the web's /metrics does (client/queue-probe.ts: one `host_stats` per host process),
 *   which never loads a queue that is put away; only a queue with jobs waiting or in
 *   flight is then asked its `pull_stats` (PROBES_AT_ONCE at a time), which tells ready
 *   from delayed and dead letters from other errors (and loads the queue, which its jobs
 *   will do anyway). A queue with nothing waiting or in flight shows its `err` count as
 *   `dead`. A queue that does not answer within PROBE_TIMEOUT_MS is left out of that
 *   scrape, and one that no longer exists is forgotten.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { QueueClient } from '../client/queue-client.js';
import { isRefusal } from '../client/refusal.js';
import type { PullStats } from '../rpc/queue-api.js';
import type { RootLayout } from '../store/layout.js';
import { probeNamed } from '../client/queue-probe.js';
import { rqQueue, type Reply } from './lmstfy-wire.js';
import type { PullClient } from './pull-client.js';

/** The /api routes that are measured. */
export type Op = 'publish' | 'bulk_publish' | 'republish' | 'consume' | 'ack';

/** Seconds: from a fast publish (a few ms) to a long-poll consume. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** A queue's `pull_stats` must answer within this, or it is left out of the scrape. */
const PROBE_TIMEOUT_MS = 2_000;
/** Queues asked their `pull_stats` at once during a scrape. */
const PROBES_AT_ONCE = 32;

/** The jobs of a queue that `lmstfy_queue_jobs` shows. */
type Sizes = Pick<PullStats, 'ready' | 'delayed' | 'leased' | 'dead'>;

type QueueLabels = 'namespace' | 'queue';

export class LmstfyMetrics {
  private readonly registry = new Registry();
  private readonly root: RootLayout;
  private readonly queues: QueueClient;
  private readonly client: PullClient;
  /** rq queue → its lmstfy names, for the queues this door has used. */
  private readonly seen = new Map<string, { namespace: string; queue: string }>();
  private readonly published: Counter<QueueLabels>;
  private readonly consumed: Counter<QueueLabels>;
  private readonly acked: Counter<QueueLabels>;
  private readonly duration: Histogram<'namespace' | 'op'>;
  private readonly limited: Counter<'namespace' | 'op'>;

  constructor(root: RootLayout, client: PullClient) {
    this.root = root;
    this.queues = new QueueClient(root);
    this.client = client;
    const registers = [this.registry];
    const labelNames = ['namespace', 'queue'] as const;
    const since = 'Since the web process started: resets when it restarts.';
    this.published = new Counter({ name: 'lmstfy_published_jobs_total', help: `Jobs published (publish, bulk, republish). ${since}`, labelNames, registers });
    this.consumed = new Counter({ name: 'lmstfy_consumed_jobs_total', help: `Jobs delivered by consume. ${since}`, labelNames, registers });
    this.acked = new Counter({ name: 'lmstfy_acked_jobs_total', help: `Acknowledgements asked (DELETE job, republish). ${since}`, labelNames, registers });
    this.duration = new Histogram({
      name: 'lmstfy_request_duration_seconds',
      help: `Time from a request's arrival to its reply, a consume's wait included. ${since}`,
      labelNames: ['namespace', 'op'],
      buckets: BUCKETS,
      registers,
    });
    this.limited = new Counter({ name: 'lmstfy_rate_limited_requests_total', help: `Requests refused by a token's rate limit (429). ${since}`, labelNames: ['namespace', 'op'], registers });
    const sizes = this.sizes.bind(this);
    new Gauge({
      name: 'lmstfy_queue_jobs',
      help: 'Jobs of the queue now, by state: ready, delayed, inflight, dead (the dead letter). Only the queues this door has used since the web process started.',
      labelNames: ['namespace', 'queue', 'state'],
      registers,
      async collect() {
        this.reset();
        for (const { labels, stats } of await sizes()) {
          this.set({ ...labels, state: 'ready' }, stats.ready);
          this.set({ ...labels, state: 'delayed' }, stats.delayed);
          this.set({ ...labels, state: 'inflight' }, stats.leased);
          this.set({ ...labels, state: 'dead' }, stats.dead);
        }
      },
    });
  }

  /** Count a request of `op` on `namespace` and `queuePart` (a consume's may list several queues) that got `reply` (undefined: its client went away). */
  observe(op: Op, namespace: string, queuePart: string, reply: Reply | undefined, seconds: number): void {
    this.duration.observe({ namespace, op }, seconds);
    const status = reply?.status;
    if (status === 429) this.limited.inc({ namespace, op });
    const labels = { namespace, queue: queuePart };
    if (op === 'consume') {
      if (status === 200 || status === 404) for (const q of queuePart.split(',')) if (q !== '') this.see(namespace, q);
      if (status === 200) for (const queue of deliveredQueues(reply!.body)) this.consumed.inc({ namespace, queue });
      return;
    }
    if (status !== (op === 'ack' ? 204 : 201)) return;
    this.see(namespace, queuePart);
    if (op !== 'ack') this.published.inc(labels, op === 'bulk_publish' ? jobCount(reply!.body) : 1);
    if (op === 'ack' || op === 'republish') this.acked.inc(labels);
  }

  /** The exposition: its content type and text. */
  async render(): Promise<{ type: string; text: string }> {
    return { type: this.registry.contentType, text: await this.registry.metrics() };
  }

  private see(namespace: string, queue: string): void {
    this.seen.set(rqQueue(namespace, queue), { namespace, queue });
  }

  /** The sizes of every queue seen that answers (see the file comment); a queue that no longer exists is forgotten. */
  private async sizes(): Promise<Array<{ labels: Record<QueueLabels, string>; stats: Sizes }>> {
    const out: Array<{ labels: Record<QueueLabels, string>; stats: Sizes }> = [];
    const busy: string[] = [];
    for (const probe of await probeNamed({ root: this.root, queues: this.queues }, [...this.seen.keys()])) {
      const labels = this.seen.get(probe.name)!;
      if (!probe.up) {
        if (!this.client.exists(probe.name)) this.seen.delete(probe.name);
      } else if (probe.counts.que + probe.counts.run > 0) {
        busy.push(probe.name);
      } else {
        out.push({ labels, stats: { ready: 0, delayed: 0, leased: 0, dead: probe.counts.err } });
      }
    }
    for (let i = 0; i < busy.length; i += PROBES_AT_ONCE) {
      await Promise.all(
        busy.slice(i, i + PROBES_AT_ONCE).map(async (rq) => {
          const reply = await this.queues.probe(rq, 'pull_stats', {}, PROBE_TIMEOUT_MS);
          if (reply !== undefined && !isRefusal(reply)) out.push({ labels: this.seen.get(rq)!, stats: reply[1] });
        }),
      );
    }
    return out;
  }
}

/** The queues of the jobs in a consume's 200 reply: one job object, or an array of them. */
function deliveredQueues(body: unknown): string[] {
  const jobs: unknown[] = Array.isArray(body) ? body : [body];
  return jobs.flatMap((job) => (typeof job === 'object' && job !== null && 'queue' in job && typeof job.queue === 'string' ? [job.queue] : []));
}

/** The jobs a bulk publish's 201 reply names. */
function jobCount(body: unknown): number {
  return typeof body === 'object' && body !== null && 'job_ids' in body && Array.isArray(body.job_ids) ? body.job_ids.length : 0;
}
