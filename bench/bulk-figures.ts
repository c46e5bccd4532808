/**
 * Figure 10 of `npm run bench` (bench.ts runs it): the dashboard's bulk retry. An install
 * runs under rq-mgr (from dist/) with one script queue holding 10,000 messages in err
 * (laid down on disk before the start, as a crash-free queue would have them) and paused,
 * so nothing runs them meanwhile. Measured: from the confirmation's POST (`POST
 * /q/<q>/bulk`, op=retry, all=1, confirm=1) until the job's `.json` says it has ended
 * with every message done, polled every 20 ms. Against this machine's limit in the same
 * run: the same number of message directories renamed from one directory to another in a
 * bare loop (renameSync each, then one fsync of each directory), which is the least a
 * durable move of them all costs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { normaliseQueueConfig, serialiseQueueConfig } from '../src/domain/queue-config.js';
import { ensureQueueDirs, queueLayout, rootLayout } from '../src/store/layout.js';
import { freePort, rqMgr, type PullBenchHelpers } from './pull-figures.js';

const GOAL_MS = 10_000;
const QUEUE = 'bulk';

/** `n` messages in `dir`, each a directory with a `msg` and a `status` as a failed run leaves them; their ids. */
function layDown(dir: string, n: number): string[] {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = `20250101.0000.00.000.${1_000_000 + i}`;
    fs.mkdirSync(path.join(dir, id));
    fs.writeFileSync(path.join(dir, id, 'msg'), JSON.stringify({ msg_id: id, dest: QUEUE, count: 1, max_count: 15, due: 1735689600 }));
    fs.writeFileSync(path.join(dir, id, 'status'), JSON.stringify({ job_status: 'PROCESS EXITED IMPROPERLY - MOVING TO ERR' }));
    ids.push(id);
  }
  return ids;
}

/** The bare limit: `ids` renamed from `from` to `to`, then both directories fsynced; ms. */
function bareRenames(from: string, to: string, ids: readonly string[]): number {
  const t0 = performance.now();
  for (const id of ids) fs.renameSync(path.join(from, id), path.join(to, id));
  for (const dir of [from, to]) {
    const fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
  return performance.now() - t0;
}

async function untilServing(base: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    try {
      if ((await fetch(`${base}/css/rq.css`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${base} does not answer`);
}

export async function figureBulk(h: PullBenchHelpers): Promise<void> {
  const n = h.quick ? 1_000 : 10_000;
  h.say(`\n[9] bulk retry from the dashboard: ${n.toLocaleString('en-US')} err messages, from the confirmation's POST to the job's end`);
  const root = h.makeInstall('bulk');
  const layout = queueLayout(rootLayout(root), QUEUE);
  ensureQueueDirs(layout);
  fs.writeFileSync(layout.configFile, serialiseQueueConfig(normaliseQueueConfig({ name: QUEUE, script: path.join(root, 'noop.sh'), num_workers: 1, exec_prefix: '' })));
  fs.writeFileSync(layout.pauseFlag, '');
  layDown(layout.stateDir('err'), n);
  const bare = path.join(root, 'bare');
  fs.mkdirSync(path.join(bare, 'a'), { recursive: true });
  fs.mkdirSync(path.join(bare, 'b'));
  const bareIds = layDown(path.join(bare, 'a'), n);
  const bareMs = bareRenames(path.join(bare, 'a'), path.join(bare, 'b'), bareIds);
  h.show(`bare renames of ${n} message directories`, `${bareMs.toFixed(0)} ms`);

  const port = await freePort();
  const configFile = rootLayout(root).mainConfig;
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(configFile, JSON.stringify({ ...config, port: String(port) }));
  rqMgr(root, 'start');
  try {
    const base = `http://127.0.0.1:${port}`;
    await untilServing(base);
    const t0 = performance.now();
    const res = await fetch(`${base}/q/${QUEUE}/bulk`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'text/html' },
      body: new URLSearchParams({ op: 'retry', state: 'err', all: '1', confirm: '1' }).toString(),
    });
    const progress = res.headers.get('location');
    if (res.status !== 303 || progress === null) throw new Error(`POST bulk: ${res.status} ${await res.text()}`);
    let job: { finished: boolean; done: number; skipped: number; failed: number };
    for (;;) {
      job = (await (await fetch(`${progress}.json`)).json()) as typeof job;
      if (job.finished) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const ms = performance.now() - t0;
    h.show(`bulk retry of ${n} err messages`, `${ms.toFixed(0)} ms (${job.done} done, ${job.skipped} skipped, ${job.failed} failed)`);
    if (job.done !== n) h.note(`10. bulk retry: ${job.done} of ${n} done, ${job.skipped} skipped, ${job.failed} failed`);
    h.addRow({
      figure: `10. bulk retry, ${n.toLocaleString('en-US')} err messages`,
      measured: `${(ms / 1000).toFixed(2)} s`,
      limit: `bare renames: ${(bareMs / 1000).toFixed(2)} s`,
      goal: '< 10 s',
      verdict: job.done === n && ms < GOAL_MS ? 'PASS' : 'MISS',
    });
  } finally {
    rqMgr(root, 'stop');
  }
}
