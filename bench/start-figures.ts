/**
 * Figure 12 of `npm run bench` (bench.ts runs it): from `bin/rq-mgr start` to the
 * dashboard answering. An install made by `bin/rq-install` (the four built-in queues)
 * holds one script queue with 10,000 waiting messages (paused, so they stay waiting);
 * rq-mgr is stopped. Each run starts `bin/rq-mgr start` and asks `GET /` every 5 ms
 * until it answers 200 with rq-mgr OPERATIONAL and the queue listed; p50 over the runs,
 * and when `rq-mgr start` itself returned. Against this machine's limit in the same run:
 * a bare `node` that loads express and answers one `GET /` (the least a Node web process
 * pays before its first page), and `node -e 0`.
 *
 * RQ_BENCH_START_OTHER=<another checkout, built> times that checkout's `bin/rq-mgr` too,
 * on an install of its own made by its own `bin/rq-install`, the two alternating run by
 * run: the side-by-side comparison of two builds.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { isOk, rpcCall } from '../src/client/rpc.js';
import { normaliseQueueConfig, serialiseQueueConfig } from '../src/domain/queue-config.js';
import { ensureQueueDirs, queueLayout, rootLayout } from '../src/store/layout.js';
import { REPO, freePort, runBin, type PullBenchHelpers } from './pull-figures.js';

const QUEUE = 'start10k';
const GOAL_MS = 600;
/**
 * How often `GET /` is asked, each after the last reply: often enough to see the moment,
 * seldom enough that the pages drawn meanwhile (rq-mgr not answering yet) take little
 * of the CPU the starting processes need.
 */
const POLL_MS = 5;

/** One checkout's install with its web port. */
interface Install {
  checkout: string;
  root: string;
  port: number;
}

/** A root made by `checkout`'s rq-install, with QUEUE holding `waiting` messages, rq-mgr stopped. */
async function makeStartInstall(h: PullBenchHelpers, checkout: string, label: string, waiting: number): Promise<Install> {
  const root = h.makeInstall(label);
  const port = await freePort();
  fs.rmSync(rootLayout(root).mainConfig);
  runBin(checkout, root, 'rq-install', [`--port=${port}`, '--env=bench']);
  const q = queueLayout(rootLayout(root), QUEUE);
  ensureQueueDirs(q);
  fs.writeFileSync(q.configFile, serialiseQueueConfig(normaliseQueueConfig({ name: QUEUE, script: path.join(root, 'noop.sh'), num_workers: 1, exec_prefix: '' })));
  fs.writeFileSync(q.pauseFlag, '');
  runBin(checkout, root, 'rq-mgr', ['start']);
  try {
    await h.runConcurrent(waiting, 16, async () => {
      const reply = await rpcCall(q.socket, 'create_message', JSON.stringify({ dest: QUEUE }));
      if (!isOk(reply)) throw new Error(`create_message: ${JSON.stringify(reply)}`);
    });
  } finally {
    runBin(checkout, root, 'rq-mgr', ['stop']);
  }
  return { checkout, root, port };
}

/** One `GET /` on 127.0.0.1:port: its status and body, or undefined when nothing answers. */
function getPage(port: number): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
  });
}

/** Is this the dashboard answering: 200, rq-mgr OPERATIONAL, QUEUE listed? */
function answering(page: { status: number; body: string } | undefined): boolean {
  return page !== undefined && page.status === 200 && page.body.includes('id="status">OPERATIONAL<') && page.body.includes(`id="kind-${QUEUE}"`);
}

/** Ask every POLL_MS until `done` holds (or `capMs` passes); ms from `t0`. */
async function pollUntil(t0: number, capMs: number, done: () => Promise<boolean>): Promise<number> {
  for (;;) {
    if (await done()) return performance.now() - t0;
    if (performance.now() - t0 > capMs) throw new Error(`not answering after ${capMs} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** One start: ms to the dashboard answering, and to `rq-mgr start` returning. Stops rq-mgr after. */
async function timeStart(i: Install): Promise<{ page: number; returned: number }> {
  spawnSync('sync');
  await new Promise((r) => setTimeout(r, 300));
  const t0 = performance.now();
  const cli = spawn(process.execPath, [path.join(i.checkout, 'bin/rq-mgr'), 'start'], { env: { ...process.env, RQ_ROOT: i.root }, stdio: 'ignore' });
  const returned = new Promise<number>((resolve) => cli.once('exit', () => resolve(performance.now() - t0)));
  try {
    const page = await pollUntil(t0, 20_000, async () => answering(await getPage(i.port)));
    return { page, returned: await returned };
  } finally {
    await returned;
    runBin(i.checkout, i.root, 'rq-mgr', ['stop']);
  }
}

/** The limit: a bare node that loads express and answers one GET /, from spawn to its reply. */
async function bareExpressMs(): Promise<number> {
  const port = await freePort();
  const code = `import express from 'express'; const app = express(); app.get('/', (_q, r) => { r.send('ok'); }); app.listen(${port}, '127.0.0.1');`;
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: REPO, stdio: 'ignore' });
  try {
    return await pollUntil(t0, 10_000, async () => (await getPage(port))?.status === 200);
  } finally {
    child.kill();
  }
}

function bareNodeMs(): number {
  const t0 = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - t0;
}

export async function figureStart(h: PullBenchHelpers): Promise<void> {
  const waiting = h.quick ? 1_000 : 10_000;
  const runs = h.quick ? 3 : 9;
  const other = process.env['RQ_BENCH_START_OTHER'];
  h.say(`\n[12] rq-mgr start -> dashboard answering: ${waiting} waiting in one queue and the built-in queues; ${runs} runs${other ? `, alternating with ${other}` : ''}`);
  const installs = [await makeStartInstall(h, REPO, 'start', waiting)];
  if (other) installs.push(await makeStartInstall(h, path.resolve(other), 'start-other', waiting));
  const page = installs.map((): number[] => []);
  const returned = installs.map((): number[] => []);
  const bareNode: number[] = [];
  const bareExpress: number[] = [];
  for (let run = 0; run < runs; run++) {
    const order = installs.map((_, k) => k);
    if (run % 2 === 1) order.reverse();
    for (const k of order) {
      const t = await timeStart(installs[k]!);
      page[k]!.push(t.page);
      returned[k]!.push(t.returned);
    }
    bareNode.push(bareNodeMs());
    bareExpress.push(await bareExpressMs());
  }
  const p50 = (xs: number[]): number => h.percentile([...xs].sort((a, b) => a - b), 50);
  const ms = (x: number): string => `${Math.round(x)} ms`;
  const [node, express] = [p50(bareNode), p50(bareExpress)];
  h.show('bare node -e 0 p50', ms(node));
  h.show('bare node + express, first GET / answered p50', ms(express));
  installs.forEach((i, k) => {
    const who = k === 0 ? 'this build' : `other build (${i.checkout})`;
    h.show(`${who}: start -> dashboard p50 (runs)`, `${ms(p50(page[k]!))} (${page[k]!.map((x) => Math.round(x)).join(', ')})`);
    h.show(`${who}: rq-mgr start returned p50`, ms(p50(returned[k]!)));
  });
  const mine = p50(page[0]!);
  h.addRow({
    figure: '12. rq-mgr start -> dashboard',
    measured: `p50 ${ms(mine)} (start returned ${ms(p50(returned[0]!))})${installs.length > 1 ? `; other build ${ms(p50(page[1]!))}` : ''}`,
    limit: `node + express answering: ${ms(express)}; node -e 0: ${ms(node)}`,
    goal: `<= ${GOAL_MS} ms`,
    verdict: mine <= GOAL_MS ? 'PASS' : 'MISS',
  });
}
