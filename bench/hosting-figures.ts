/**
 * Figure 8 of `npm run bench` (bench.ts runs it): many queues on one host. Installs run
 * under rq-mgr as `npm start` would run them, from dist/; memory is the proportional set
 * size (PSS, /proc/<pid>/smaps_rollup) summed over rq-mgr and every process under it, so
 * pages the processes share are counted once.
 *
 *  (a) a fresh install at rest (rq-mgr, the web, the four built-in queues), 3 s after
 *      `rq-mgr start`: PSS and RSS; against a bare `node` process at rest (the floor of
 *      one process), measured in the same run;
 *  (b) N lmstfy queues made by publishing one job to each new name (16 clients), then 200
 *      more one at a time: PSS per queue over the same install before (and the RSS), and
 *      the one-at-a-time publish to a new name p50 / p99, against a publish to a queue that
 *      exists (the same run);
 *  (c) rq-mgr stopped and started with those N queues: from `rq-mgr start` until a peek
 *      of every queue (16 clients) has shown its job; and the PSS per queue just after the
 *      start (served, not loaded: a pull queue loads at its first command) and after the
 *      peeks (each loaded, with one job waiting);
 *  (d) the dashboard overview (`/`, a page of 100 queues; and filtered), `/q.json?page=1`
 *      and the whole `/q.json` (no goal) with those N queues: p50 and worst of 10, against
 *      a bare `GET /css/rq.css` from the same web process.
 * (b) to (d) run with N = 2,000 (with goals) and N = 10,000 (printed, no goal).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { rootLayout } from '../src/store/layout.js';
import { REPO, freePort, rqMgr, type PullBenchHelpers } from './pull-figures.js';

const CLIENTS = 16;
/** New names published to one at a time, for the first publish's latency. */
const FIRST_PUBLISHES = 200;
const REST_MS = 3_000;
const PAGE_REPS = 10;

/** PSS and RSS (MB) of a process. */
function memoryOf(pid: number): { pss: number; rss: number } {
  try {
    const text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return { pss: kb('Pss') / 1024, rss: kb('Rss') / 1024 };
  } catch {
    return { pss: 0, rss: 0 };
  }
}

/** rq-mgr's pid and every process under it (hosts, queue processes, web, spawners). */
function treeOf(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      const kids = fs.readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'utf8').trim();
      if (kids) out.push(...kids.split(/\s+/).map(Number));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The title a process gave itself (`[rq-host] [1]`), for the breakdown. */
function titleOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!.trim().replace(/^\[(rq-[a-z]+)\].*$/, '$1');
  } catch {
    return '?';
  }
}

/** Summed PSS and RSS (MB) of rq-mgr of `root` and everything under it, how many processes, and the PSS of each kind. */
function installMemory(root: string): { pss: number; rss: number; procs: number; kinds: string } {
  const pid = Number(fs.readFileSync(rootLayout(root).mgrPidFile, 'utf8'));
  const pids = treeOf(pid);
  let pss = 0;
  let rss = 0;
  const byKind = new Map<string, number>();
  for (const p of pids) {
    const m = memoryOf(p);
    pss += m.pss;
    rss += m.rss;
    const kind = titleOf(p);
    byKind.set(kind, (byKind.get(kind) ?? 0) + m.pss);
  }
  const kinds = [...byKind].map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
  return { pss, rss, procs: pids.length, kinds };
}

/** A bare `node` process at rest: its PSS and RSS (MB). */
async function bareNode(): Promise<{ pss: number; rss: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 1_000));
  const m = memoryOf(child.pid!);
  child.kill();
  return m;
}

const mb = (n: number): string => `${n.toFixed(1)} MB`;

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export async function timeGets(url: string, reps: number): Promise<{ p50: number; max: number; status: number }> {
  const times: number[] = [];
  let status = 0;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    status = res.status;
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), max: times[times.length - 1]!, status };
}

/** An install under rq-mgr with the lmstfy door (no tokens) on: its root, the door's base URL and the web's. */
async function lmstfyInstall(h: PullBenchHelpers, label: string): Promise<{ root: string; api: string; web: string }> {
  const root = h.makeInstall(label);
  const [webPort, port] = [await freePort(), await freePort()];
  const configFile = rootLayout(root).mainConfig;
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(configFile, JSON.stringify({ ...config, port: String(webPort), protocols: { lmstfy: { port, auth: false } } }));
  rqMgr(root, 'start');
  const api = `http://127.0.0.1:${port}/api`;
  for (let i = 0; ; i++) {
    try {
      await (await fetch(`${api}/bench/warm/size`)).arrayBuffer();
      break;
    } catch (e) {
      if (i > 200) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { root, api, web: `http://127.0.0.1:${webPort}` };
}

async function publish(url: string, body: string): Promise<void> {
  const res = await fetch(url, { method: 'PUT', body });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`publish ${url}: ${res.status} ${text}`);
}

export async function figureHosting(h: PullBenchHelpers): Promise<void> {
  h.say('\n[8] many queues on one host: memory at rest, queues made by the lmstfy door, restart, overview');
  // (a) at rest
  const fresh = h.makeInstall('rest');
  // The install `npm start` makes: rq-install's config and its four built-in queues.
  fs.rmSync(rootLayout(fresh).mainConfig);
  const installed = spawnSync(process.execPath, [path.join(REPO, 'bin/rq-install'), '--port', String(await freePort())], { env: { ...process.env, RQ_ROOT: fresh }, encoding: 'utf8' });
  if (installed.status !== 0) throw new Error(`rq-install: ${installed.stdout}${installed.stderr}`);
  rqMgr(fresh, 'start');
  await new Promise((r) => setTimeout(r, REST_MS));
  const rest = installMemory(fresh);
  rqMgr(fresh, 'stop');
  const bare = await bareNode();
  h.show('fresh install at rest', `${mb(rest.pss)} PSS, ${mb(rest.rss)} RSS, ${rest.procs} processes (PSS MB: ${rest.kinds})`);
  h.show('bare node at rest', `${mb(bare.pss)} PSS, ${mb(bare.rss)} RSS`);
  h.addRow({
    figure: '8a. fresh install at rest (PSS)',
    measured: `${mb(rest.pss)} (RSS ${mb(rest.rss)}, ${rest.procs} processes)`,
    limit: `bare node ${mb(bare.pss)} PSS each`,
    goal: '<= 60 MB',
    verdict: rest.pss <= 60 ? 'PASS' : 'MISS',
  });
  for (const n of h.quick ? [200] : [2_000, 10_000]) await manyQueues(h, n, n === 2_000 || h.quick);
}

async function manyQueues(h: PullBenchHelpers, n: number, goals: boolean): Promise<void> {
  const { root, api, web } = await lmstfyInstall(h, `hosting-${n}`);
  const goal = (text: string, ok: boolean): { goal: string; verdict: string } => (goals ? { goal: text, verdict: ok ? 'PASS' : 'MISS' } : { goal: '(info)', verdict: '-' });
  try {
    await new Promise((r) => setTimeout(r, REST_MS));
    const before = installMemory(root);
    // The floor: publishes to a queue that exists.
    const existing: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await publish(`${api}/bench/warm`, `job ${i}`);
      existing.push(performance.now() - t0);
    }
    existing.sort((a, b) => a - b);
    const t0 = performance.now();
    await h.runConcurrent(n, CLIENTS, (i) => publish(`${api}/bench/q${i}`, `job ${i}`));
    const madeMs = performance.now() - t0;
    // The first publish's latency: one client, one new name at a time.
    const lat: number[] = [];
    for (let i = 0; i < FIRST_PUBLISHES; i++) {
      const s = performance.now();
      await publish(`${api}/first/q${i}`, `job ${i}`);
      lat.push(performance.now() - s);
    }
    lat.sort((a, b) => a - b);
    await new Promise((r) => setTimeout(r, REST_MS));
    const after = installMemory(root);
    const perQueueKb = ((after.pss - before.pss) * 1024) / (n + FIRST_PUBLISHES);
    h.show(`${n} queues made, ${CLIENTS} clients`, `${(madeMs / 1000).toFixed(1)} s; PSS ${mb(before.pss)} -> ${mb(after.pss)}: ${perQueueKb.toFixed(0)} KB per queue of ${n + FIRST_PUBLISHES} (RSS ${mb(before.rss)} -> ${mb(after.rss)}), ${after.procs} processes`);
    h.show('PSS by process, before / after', `${before.kinds} / ${after.kinds}`);
    h.show('publish to a new name p50 / p99', `${percentile(lat, 50).toFixed(2)} / ${percentile(lat, 99).toFixed(2)} ms (1 client, ${FIRST_PUBLISHES} names)`);
    h.show('publish to an existing queue p50', `${percentile(existing, 50).toFixed(2)} ms (1 client)`);
    h.addRow({
      figure: `8b. ${n.toLocaleString('en-US')} lmstfy queues: PSS per queue`,
      measured: `${perQueueKb.toFixed(0)} KB (${mb(before.pss)} -> ${mb(after.pss)})`,
      limit: `bare node ${mb(before.pss / Math.max(before.procs, 1))} per process`,
      ...goal('<= 256 KB', perQueueKb <= 256),
    });
    const newP50 = percentile(lat, 50);
    h.addRow({
      figure: `8b. ${n.toLocaleString('en-US')} lmstfy queues: first publish`,
      measured: `p50 ${newP50.toFixed(2)} ms, p99 ${percentile(lat, 99).toFixed(2)} ms`,
      limit: `publish to an existing queue p50 ${percentile(existing, 50).toFixed(2)} ms`,
      ...goal('p50 <= 20 ms', newP50 <= 20),
    });
    // (c) stop and start
    rqMgr(root, 'stop');
    const s0 = performance.now();
    rqMgr(root, 'start');
    const started = performance.now() - s0;
    // Served, not loaded yet: a pull queue's waiting messages wait for its first command.
    const opened = installMemory(root);
    await h.runConcurrent(n, CLIENTS, async (i) => {
      for (;;) {
        try {
          const res = await fetch(`${api}/bench/q${i}/peek`);
          const text = await res.text();
          if (res.status === 200) return;
          if (res.status !== 503 && res.status !== 404) throw new Error(`peek q${i}: ${res.status} ${text}`);
        } catch (e) {
          if (!(e instanceof TypeError)) throw e;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    const consumable = performance.now() - s0;
    const loaded = installMemory(root);
    const perQueue = (m: { pss: number }): string => `${(((m.pss - before.pss) * 1024) / (n + FIRST_PUBLISHES)).toFixed(0)} KB`;
    h.show('after the start: per queue, served / loaded', `${perQueue(opened)} / ${perQueue(loaded)} PSS (PSS MB: ${opened.kinds} / ${loaded.kinds})`);
    h.addRow({
      figure: `8c. ${n.toLocaleString('en-US')} queues: PSS per queue, put away / loaded`,
      measured: `${perQueue(opened)} / ${perQueue(loaded)}`,
      limit: `over the install before: ${mb(before.pss)}`,
      goal: '(info)',
      verdict: '-',
    });
    h.show('stop, start: every job consumable', `${(consumable / 1000).toFixed(2)} s (rq-mgr start returned after ${(started / 1000).toFixed(2)} s)`);
    h.addRow({
      figure: `8c. ${n.toLocaleString('en-US')} queues: start -> every job consumable`,
      measured: `${(consumable / 1000).toFixed(2)} s`,
      limit: `rq-mgr start returned in ${(started / 1000).toFixed(2)} s`,
      ...goal('<= 5 s', consumable <= 5_000),
    });
    // (d) overview and /q.json
    const css = await timeGets(`${web}/css/rq.css`, PAGE_REPS);
    const pages = [
      ['overview /', `${web}/`, true],
      ['overview, filtered', `${web}/?filter=q19`, true],
      ['/q.json?page=1', `${web}/q.json?page=1`, true],
      ['/q.json, every queue', `${web}/q.json`, false],
    ] as const;
    for (const [what, url, withGoal] of pages) {
      const t = await timeGets(url, PAGE_REPS);
      h.show(`${what}`, `p50 ${t.p50.toFixed(1)} ms, worst ${t.max.toFixed(1)} ms (HTTP ${t.status})`);
      h.addRow({
        figure: `8d. ${n.toLocaleString('en-US')} queues: ${what}`,
        measured: `p50 ${t.p50.toFixed(1)} ms, worst ${t.max.toFixed(1)} ms`,
        limit: `GET /css/rq.css p50 ${css.p50.toFixed(1)} ms`,
        ...(withGoal ? goal('<= 300 ms', t.max <= 300) : { goal: '(info)', verdict: '-' }),
      });
    }
  } finally {
    rqMgr(root, 'stop');
    spawnSync('sync');
  }
}
