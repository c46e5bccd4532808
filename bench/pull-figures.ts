/**
 * Figure 5 of `npm run bench` (bench.ts runs it): the pull model through a real front
 * door. An install under rq-mgr serves the lmstfy protocol (dev mode, no tokens) on
 * 127.0.0.1; every request is real HTTP from this process, every lease and ack a durable
 * commit in the queue process.
 *
 *  (a) lease+ack pairs per second: jobs published beforehand, then 16 concurrent workers
 *      each loop GET (consume, ttr 60) and DELETE (ack) until the queue is empty; against
 *      the same run's bare 16-way durable create loop (a pair is two durable commits:
 *      que → run, run → done);
 *  (b) publish → consume latency: one consumer waits in a blocking consume (timeout 10 s)
 *      while one job is published; from sending the PUT to the consumer holding the job.
 *      p50 and p99 over one job at a time, against a bare HTTP round trip (GET of the
 *      web's stylesheet from the same rq).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { rootLayout } from '../src/store/layout.js';

export interface PullBenchHelpers {
  makeInstall(label: string): string;
  say(line: string): void;
  show(label: string, value: string): void;
  addRow(row: { figure: string; measured: string; limit: string; goal: string; verdict: string }): void;
  note(text: string): void;
  /** The bare 16-way durable create loop of figure 1, measured now. */
  bareAsyncRate(): Promise<number>;
  runConcurrent(total: number, concurrency: number, job: (i: number) => Promise<void>): Promise<void>;
  percentile(sorted: readonly number[], p: number): number;
  quick: boolean;
}

const WORKERS = 16;
const GOAL_PAIRS = 2_000;
export const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Run `checkout`'s `bin/<command>` on `root`; throws with its output unless it exits 0. */
export function runBin(checkout: string, root: string, command: string, args: readonly string[]): void {
  const r = spawnSync(process.execPath, [path.join(checkout, 'bin', command), ...args], { env: { ...process.env, RQ_ROOT: root }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')}: ${r.stdout}${r.stderr}`);
}

export function rqMgr(root: string, command: 'start' | 'stop' | 'reload'): void {
  runBin(REPO, root, 'rq-mgr', [command]);
}

async function untilListening(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`${url} does not answer`);
}

/** Print and tabulate a latency figure (p50/p99 of `lat`, ms) next to the p50 of its bare counterpart. */
export function latencyRow(h: PullBenchHelpers, label: { figure: string; what: string; bare: string }, lat: number[], bareLat: number[]): void {
  lat.sort((a, b) => a - b);
  bareLat.sort((a, b) => a - b);
  const [p50, p99] = [h.percentile(lat, 50), h.percentile(lat, 99)];
  const bareP50 = h.percentile(bareLat, 50);
  h.show(`${label.what} p50 / p99`, `${p50.toFixed(2)} / ${p99.toFixed(2)} ms`);
  h.show(`${label.bare} p50`, `${bareP50.toFixed(2)} ms`);
  h.addRow({
    figure: label.figure,
    measured: `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`,
    limit: `${label.bare} p50 ${bareP50.toFixed(2)} ms`,
    goal: '(info)',
    verdict: '-',
  });
}

export async function figurePull(h: PullBenchHelpers): Promise<void> {
  const jobs = h.quick ? 400 : 6_000;
  const samples = h.quick ? 30 : 300;
  h.say(`\n[5] pull model over HTTP (lmstfy front door): ${jobs} jobs leased and acked by ${WORKERS} workers; ${samples} publish -> consume samples`);
  const root = h.makeInstall('pull');
  const [webPort, port] = [await freePort(), await freePort()];
  const configFile = rootLayout(root).mainConfig;
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(configFile, JSON.stringify({ ...config, port: String(webPort), protocols: { lmstfy: { port, auth: false } } }));
  rqMgr(root, 'start');
  try {
    const base = `http://127.0.0.1:${port}/api/bench`;
    await untilListening(`http://127.0.0.1:${port}/api/bench/q/size`);
    const publish = async (queue: string, body: string): Promise<void> => {
      const res = await fetch(`${base}/${queue}?tries=3`, { method: 'PUT', body });
      if (res.status !== 201) throw new Error(`publish: ${res.status} ${await res.text()}`);
    };
    // (a) lease + ack
    const p0 = performance.now();
    await h.runConcurrent(jobs, WORKERS, (i) => publish('q', `job ${i}`));
    const publishRate = jobs / ((performance.now() - p0) / 1000);
    h.show(`publish, ${WORKERS} clients`, `${Math.round(publishRate)} jobs/s`);
    let pairs = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: WORKERS }, async () => {
        for (;;) {
          const res = await fetch(`${base}/q?ttr=60`);
          if (res.status === 404) {
            await res.arrayBuffer();
            return;
          }
          const job = (await res.json()) as { job_id: string };
          const ack = await fetch(`${base}/q/job/${job.job_id}`, { method: 'DELETE' });
          await ack.arrayBuffer();
          if (ack.status !== 204) throw new Error(`ack: ${ack.status}`);
          pairs++;
        }
      }),
    );
    const rate = pairs / ((performance.now() - t0) / 1000);
    if (pairs !== jobs) h.note(`5a. lease+ack: ${pairs} pairs for ${jobs} jobs published`);
    const bare = await h.bareAsyncRate();
    h.show(`bare durable creates, ${WORKERS}-way`, `${Math.round(bare)}/s`);
    h.show(`lease+ack, ${WORKERS} workers`, `${Math.round(rate)} pairs/s`);
    h.addRow({
      figure: `5a. lease+ack, ${WORKERS} HTTP workers`,
      measured: `${Math.round(rate)} pairs/s (${(rate / bare).toFixed(2)}x limit)`,
      limit: `bare creates, ${WORKERS}-way: ${Math.round(bare)}/s`,
      goal: `>= ${GOAL_PAIRS.toLocaleString('en-US')} pairs/s and >= 0.5x limit`,
      verdict: rate >= GOAL_PAIRS && rate >= 0.5 * bare ? 'PASS' : 'MISS',
    });
    // (b) publish → consume latency
    const lat: number[] = [];
    const bareLat: number[] = [];
    const css = `http://127.0.0.1:${webPort}/css/rq.css`;
    for (let i = 0; i < samples + 10; i++) {
      const consumed = fetch(`${base}/lat?ttr=60&timeout=10`).then(async (res) => {
        const at = performance.now();
        const job = (await res.json()) as { job_id: string };
        await (await fetch(`${base}/lat/job/${job.job_id}`, { method: 'DELETE' })).arrayBuffer();
        return at;
      });
      // Give the consume time to reach its wait, so the figure is the wake-up path.
      await new Promise((r) => setTimeout(r, 5));
      const sent = performance.now();
      await publish('lat', `sample ${i}`);
      const got = await consumed;
      const b0 = performance.now();
      await (await fetch(css)).arrayBuffer();
      if (i >= 10) {
        lat.push(got - sent);
        bareLat.push(performance.now() - b0);
      }
    }
    latencyRow(h, { figure: '5b. publish -> consume latency', what: 'publish -> consume', bare: 'bare HTTP GET' }, lat, bareLat);
  } finally {
    rqMgr(root, 'stop');
  }
}
