/**
 * rq benchmark: `npm run bench` (= `npm run build && node dist/bench/bench.js`).
 *
 * It is not a test: it prints figures, and each figure is printed next to this machine's
 * own limit, measured in the same run. It ends with a table: figure | measured | machine
 * limit (same run) | goal | verdict. Nothing is mocked: queue processes are started from
 * dist/ in temp install roots under os.tmpdir(), clients speak RQ's socket framing, the
 * queue forks real scripts, and every create is synced to the real disk (its journal
 * record) before its reply.
 *
 *  1. Durable creates over the socket (`create_message`) with 1 client and with 16
 *     concurrent clients, against a bare Node loop of mkdir + write + fsync + rename +
 *     fsync(dir): sync calls, and 16-way with fs.promises. Beside each, the CPU (user +
 *     system) each create cost the queue process, the clients and the bare loop.
 *  2. Processing throughput: 2,000 messages queued while paused, run by a no-op script
 *     (exec_prefix "") with 1 and with 4 workers, timed from un-pausing until
 *     num_messages shows them all done; against child_process.spawn of the same script
 *     with the same stdio shape (['ignore', fd, fd, 'pipe', 'pipe']), 1 and 4 in flight,
 *     measured just before and just after each drain (the limit is their mean: this
 *     machine's spawn rate drifts within minutes).
 *     The 4-worker queue runs once more with its root on /dev/shm (tmpfs), as an (info)
 *     row: the engine's own cost, without the disk's for the files each run makes.
 *  3. Latency from create_message to the script's start, one message at a time on an
 *     idle queue (the script records bash's $EPOCHREALTIME); against a bare spawn of the
 *     same script.
 *  4. A queue with 100,000 waiting messages: (a) recovery after kill -9 with a dropped
 *     page cache, from process start to the first message in run/, against a cold
 *     listing of que/ and a cold `node -e 0`; (b) drain rate (4 workers, windows of 500
 *     completions) against the same setup with only 500 waiting; (c) the queue process's
 *     RSS against a queue process with nothing waiting (its spawner processes' memory is
 *     printed, and noted, beside it); (d) the web's queue page
 *     (first, middle and last page of que) and (e) its free-text search over the same
 *     queue, against a bare `GET /css/rq.css` from the same web process.
 *  5. The pull model over HTTP (pull-figures.ts): lease+ack pairs per second with 16
 *     workers through the lmstfy front door, and publish → consume latency.
 *  6. The Workq front door over TCP (workq-figures.ts): add+lease+complete per second
 *     with 16 connections, and the `run` round trip p50/p99.
 *  7. Memory (RSS from /proc/<pid>/status): a queue process with 1,000 waiting messages
 *     whose param1 is 1 MiB, against one with as many waiting without params; and four
 *     concurrent 60 MiB form posts through the web: the web's peak, and the queue
 *     process's peak and what it keeps after, against each one's RSS before them.
 *  8. Many queues on one host (hosting-figures.ts): a fresh install's memory at rest;
 *     2,000 and 10,000 lmstfy queues made by publishing to new names (memory per queue,
 *     the first publish's latency), a stop and start with them, and the overview.
 *  9. The queue page's lists (list-figures.ts): filters, sorts and free text over
 *     100,000 waiting and 100,000 done messages, and the search of 4e at 100,000 waiting.
 * 10. The dashboard's bulk retry (bulk-figures.ts): 10,000 err messages retried, from the
 *     confirmation's POST to the job's end, against 10,000 bare directory renames.
 * 11. The CLI (cli-figures.ts): `bin/rq sendmesg`, one call against a running queue, p50
 *     and p90, alternated with a bare `node -e 0`.
 * 12. `rq-mgr start` until the dashboard answers (start-figures.ts), 10,000 waiting, against
 *     a bare node that loads express and answers, and `node -e 0`.
 *
 * Plan (as measured on these machines): ext4 here has no journal
 * and creates files much more slowly for minutes after many directories are deleted, so
 * every measurement gets a fresh root and nothing is deleted until the very end of the
 * run. The run re-executes itself once with UV_THREADPOOL_SIZE=16, the queue process's
 * own setting, so that the 16-way fs.promises baseline gets as many threads as rq does.
 * Each measurement has a time cap (CAP_MS) so that a slow build still finishes in
 * minutes; a capped figure is computed over what was done, and the notes say so.
 *
 * Options: `--quick` runs everything at a tenth of the sizes (a smoke run, not the
 * benchmark); `--only=<n>` runs only the figures whose name starts with n (e.g. `--only=5`); RQ_BENCH_QUEUE_MAIN=<path to queue-main.js> benchmarks another build;
 * `--duel=<path to queue-main.js>` runs no figure, but this build and that one side by
 * side (see `duel`), to tell two builds apart on a machine whose speed drifts.
 * The machine should be otherwise idle: other processes' CPU and disk use show up in
 * both the figures and the limits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { INSTALL_DEFAULTS, mainConfigText } from '../src/cli/rq-install.js';
import { isOk, rpcCall } from '../src/client/rpc.js';
import { normaliseQueueConfig, serialiseQueueConfig } from '../src/domain/queue-config.js';
import { QUEUE_MAIN as BUILT_QUEUE_MAIN, QUEUE_NODE_FLAGS, WEB_MAIN } from '../src/lib/install-root.js';
import { ensureQueueDirs, queueLayout, rootLayout, type QueueLayout } from '../src/store/layout.js';
import { figurePull, freePort, type PullBenchHelpers } from './pull-figures.js';
import { figureHosting } from './hosting-figures.js';
import { figureLists } from './list-figures.js';
import { figureWorkq } from './workq-figures.js';
import { figureBulk } from './bulk-figures.js';
import { figureCli } from './cli-figures.js';
import { figureStart } from './start-figures.js';

/** The queue process under test; RQ_BENCH_QUEUE_MAIN may point at another build to compare. */
const QUEUE_MAIN = process.env['RQ_BENCH_QUEUE_MAIN'] ?? BUILT_QUEUE_MAIN;
const WEB_PAGE_REPS = 20;
const THREADPOOL = '16';

/** `node dist/bench/bench.js --quick`: a smoke run at a tenth of the sizes (figures not comparable). */
const QUICK = process.argv.includes('--quick');
const scale = (n: number): number => (QUICK ? Math.max(1, Math.round(n / 10)) : n);
const CREATES = scale(3_000);
const CLIENTS = 16;
const WARMUP = 100;
const PROCESS_MSGS = scale(2_000);
const LATENCY_MSGS = scale(200);
const LATENCY_WARMUP = 20;
const BIG_QUEUE = scale(100_000);
const DRAIN_WINDOW = scale(500);
const DRAIN_REPS = 4;
/** Figure 7: waiting messages with a big param, its size, and the goal above the same queue without params. */
const BIG_PARAM_MSGS = scale(1_000);
const BIG_PARAM_BYTES = 1024 * 1024;
const BIG_PARAMS_GOAL_MB = 100;
/** Figure 7: concurrent posts of a 60 MiB form body each. */
const BIG_BODIES = 4;
const BIG_BODY_BYTES = 60 * 1024 * 1024;
/** Figure 7: how long after those posts the queue process's RSS is read. */
const AFTER_BODIES_MS = 15_000;
/** Measured: a sequential durable create runs at about 2,100/s on these machines. */
const ARCH_BARE_CREATES = 2_100;
/**
 * Time caps, so that a slow build still finishes in minutes: a measurement that reaches
 * its cap stops, reports the rate of what it did, and says so in the notes. The 100k
 * fill takes ~50 s at 2,000 creates/s.
 */
const CAP_MS = { creates: 20_000, fill: 20_000, drain: 40_000, latency: 30_000, bigFill: 120_000, drainWindows: 30_000 };
/** Rounds of `--duel`. */
const DUEL_ROUNDS = 3;

const NOOP_SCRIPT = '#!/bin/sh\necho done >&3\n';
/** Records its own start (bash's clock, no extra fork) in its cwd, then reports done. */
const STAMP_SCRIPT = '#!/bin/bash\necho ${EPOCHREALTIME} > start\necho done >&3\n';
/** About the size of a real `msg` (what the bare create loop writes). */
const MSG_BODY = JSON.stringify({
  msg_id: '20261121.0738.42.370.1234567',
  dest: 'b',
  orig_msg_id: 'http://127.0.0.1:3333/q/b/20261121.0738.42.370.1234567',
  count: 0,
  max_count: 15,
  due: 1763710722,
});

// ───────────────────────────── small helpers ─────────────────────────────

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const say = (line: string): void => void process.stdout.write(`${line}\n`);
/** A progress line: a label and its figure, aligned. */
const show = (label: string, value: string): void => say(`  ${`${label}:`.padEnd(40)} ${value}`);
const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const ms2 = (n: number): string => `${n.toFixed(2)} ms`;
const secs = (ms: number): string => `${(ms / 1000).toFixed(3)} s`;
const pct = (a: number, b: number): string => `${Math.round((100 * a) / b)}%`;

/** Wall-clock milliseconds with µs resolution: performance.now() anchored at a tick of Date.now(). */
function calibratedClock(): () => number {
  const first = Date.now();
  let now = Date.now();
  while (now === first) now = Date.now();
  const offset = now - performance.now();
  return () => offset + performance.now();
}

/** Run `job` `total` times with at most `concurrency` in flight. */
async function runConcurrent(total: number, concurrency: number, job: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < total) await job(next++);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, lane));
}

function percentile(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

/** Drop the page cache (we are root on these machines). False when the kernel refuses. */
function dropCaches(): boolean {
  spawnSync('sync');
  try {
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
    return true;
  } catch {
    return false;
  }
}

/** A process's resident memory now (`VmRSS`), or at its peak so far (`VmHWM`), in MB. */
function rssMb(pid: number, which: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const m = new RegExp(`^${which}:\\s+(\\d+)\\s+kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${which} for pid ${pid}`);
  return Number(m[1]) / 1024;
}

/** The resident and the anonymous (own) memory of a queue process's spawners, its only children. */
function spawnersMemory(queuePid: number): { n: number; rssMb: number; anonMb: number } {
  let children: number[];
  try {
    children = fs.readFileSync(`/proc/${queuePid}/task/${queuePid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    children = [];
  }
  let rss = 0;
  let anon = 0;
  let n = 0;
  for (const pid of children) {
    let status: string;
    try {
      status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue; // it exited since the listing
    }
    n++;
    rss += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024;
    anon += Number(/^RssAnon:\s+(\d+)/m.exec(status)?.[1] ?? 0) / 1024;
  }
  return { n, rssMb: rss, anonMb: anon };
}

function fsTypeOf(dir: string): string {
  let best = { mount: '', type: '?' };
  for (const line of fs.readFileSync('/proc/mounts', 'utf8').split('\n')) {
    const [, mount, type] = line.split(' ');
    if (mount === undefined || type === undefined) continue;
    const inside = dir === mount || dir.startsWith(mount.endsWith('/') ? mount : `${mount}/`);
    if (inside && mount.length >= best.mount.length) best = { mount, type };
  }
  return `${best.type} (mounted at ${best.mount})`;
}

// ───────────────────────────── temp roots ─────────────────────────────

/** Every temp dir of the run; all are removed at the very end, never in between. */
const tempDirs: string[] = [];

function makeTemp(label: string, base = os.tmpdir()): string {
  const dir = fs.mkdtempSync(path.join(base, `rq-bench-${label}-`));
  tempDirs.push(dir);
  return dir;
}

function writeScript(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text, { mode: 0o755 });
  return file;
}

type ScriptName = 'noop.sh' | 'stamp.sh';

/** An install's config/config.json as rq-install writes it, with env "bench" and the given port. */
function writeMainConfig(root: string, port: number): void {
  fs.writeFileSync(rootLayout(root).mainConfig, mainConfigText({ ...INSTALL_DEFAULTS, env: 'bench', port }));
}

/** A temp install root: config/config.json, queues/, `queue -> queues`, the two scripts. */
function makeInstall(label: string, base?: string): string {
  const root = makeTemp(label, base);
  const layout = rootLayout(root);
  fs.mkdirSync(layout.configDir);
  fs.mkdirSync(layout.queuesDir);
  fs.symlinkSync(path.basename(layout.queuesDir), path.join(root, 'queue'));
  writeMainConfig(root, INSTALL_DEFAULTS.port);
  writeScript(root, 'noop.sh', NOOP_SCRIPT);
  writeScript(root, 'stamp.sh', STAMP_SCRIPT);
  return root;
}

// ───────────────────────────── a queue process ─────────────────────────────

interface Counts {
  prep: number;
  que: number;
  run: number;
  done: number;
  relayed: number;
  err: number;
}

function parseCounts(reply: unknown): Counts {
  if (typeof reply !== 'object' || reply === null || Array.isArray(reply)) throw new Error(`num_messages: ${JSON.stringify(reply)}`);
  const o = reply as Record<string, unknown>;
  const n = (k: keyof Counts): number => {
    const v = o[k];
    if (typeof v !== 'number') throw new Error(`num_messages: no number "${k}" in ${JSON.stringify(reply)}`);
    return v;
  };
  return { prep: n('prep'), que: n('que'), run: n('run'), done: n('done'), relayed: n('relayed'), err: n('err') };
}

interface QueueOptions {
  workers: number;
  script: ScriptName;
  paused: boolean;
  /** Where the install root is made (default: the temp dir). */
  base?: string;
  /** The queue process's entry point (default: the build under test). */
  main?: string;
  /** Node flags for the queue process (default: the build under test's QUEUE_NODE_FLAGS). */
  nodeFlags?: readonly string[];
}

/** Queue processes alive right now (killed on an interrupt). */
const liveQueues = new Set<BenchQueue>();
/** Every queue of the run, for what their processes logged. */
const allQueues: BenchQueue[] = [];

/** One queue `b` in its own install root, and its `queue-main` process. */
class BenchQueue {
  readonly root: string;
  readonly name = 'b';
  readonly label: string;
  readonly layout: QueueLayout;
  private readonly main: string;
  private readonly nodeFlags: readonly string[];
  private child: ChildProcess | undefined;
  private output = '';
  /** Everything the process logged at warn level or worse, over all its lives. */
  readonly complaints: string[] = [];

  constructor(label: string, opts: QueueOptions) {
    this.label = label;
    this.main = opts.main ?? QUEUE_MAIN;
    this.nodeFlags = opts.nodeFlags ?? QUEUE_NODE_FLAGS;
    this.root = makeInstall(label, opts.base);
    this.layout = queueLayout(rootLayout(this.root), this.name);
    ensureQueueDirs(this.layout);
    const config = normaliseQueueConfig({ name: this.name, script: path.join(this.root, opts.script), num_workers: opts.workers, exec_prefix: '' });
    fs.writeFileSync(this.layout.configFile, serialiseQueueConfig(config));
    if (opts.paused) this.setPauseFlag(true);
    allQueues.push(this);
  }

  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined || !this.running()) throw new Error('queue process is not running');
    return pid;
  }

  running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Start `queue-main` (cwd = the root) and wait until it answers ping. */
  async start(timeoutMs = 60_000): Promise<void> {
    const child = spawn(process.execPath, [...this.nodeFlags, this.main, this.name], {
      cwd: this.root,
      env: { ...process.env, RQ_ROOT: this.root, RQ_LOG_LEVEL: 'warn', RQ_FATAL_DELAY_MS: '0' },
      // The IPC channel makes the queue process exit if this benchmark dies.
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child = child;
    this.output = '';
    const collect = (chunk: Buffer): void => {
      this.output += chunk.toString();
      const lines = this.output.split('\n');
      this.output = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '') this.complaints.push(line);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    liveQueues.add(this);
    child.on('exit', () => liveQueues.delete(this));
    const until = performance.now() + timeoutMs;
    for (;;) {
      if (!this.running()) throw new Error(`queue process exited at start-up: ${this.complaints.slice(-5).join(' | ')}`);
      const reply = await rpcCall(this.layout.socket, 'ping', '', 2_000);
      if (Array.isArray(reply) && reply[0] === 'pong') return;
      if (performance.now() > until) throw new Error(`queue process did not answer ping within ${timeoutMs} ms`);
      await sleep(2);
    }
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (!child || !this.running()) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(sig);
    const timeout = sleep(10_000).then(() => 'timeout' as const);
    if ((await Promise.race([gone, timeout])) === 'timeout') {
      child.kill('SIGKILL');
      await gone;
    }
  }

  kill9(): Promise<void> {
    return this.signal('SIGKILL');
  }

  stop(): Promise<void> {
    return this.signal('SIGTERM');
  }

  setPauseFlag(on: boolean): void {
    if (on) fs.writeFileSync(this.layout.pauseFlag, '');
    else fs.rmSync(this.layout.pauseFlag, { force: true });
  }

  /** Pause or un-pause now: the queue re-reads its flags on every RPC. */
  async setPaused(on: boolean): Promise<void> {
    this.setPauseFlag(on);
    await this.counts();
  }

  rpc(command: string, arg: object): Promise<unknown> {
    return rpcCall(this.layout.socket, command, JSON.stringify(arg));
  }

  /** create_message (with `fields` besides `dest`); returns the short id. */
  async create(fields: object = {}): Promise<string> {
    const reply = await this.rpc('create_message', { dest: this.name, ...fields });
    if (!isOk(reply) || typeof reply[1] !== 'string') {
      throw new Error(`create_message failed: ${JSON.stringify(reply)}`);
    }
    const full = reply[1];
    return full.slice(full.lastIndexOf('/') + 1);
  }

  /** `<n> messages went to err (first: <its status>)`, for a note. */
  async errNote(n: number): Promise<string> {
    const first = ((await this.rpc('messages', { state: 'err', offset: 0, limit: 1 })) as Array<{ status?: string }>)[0];
    return `${n} messages went to err (first: ${first?.status ?? 'unknown'})`;
  }

  async counts(): Promise<Counts> {
    return parseCounts(await this.rpc('num_messages', {}));
  }

  /**
   * Create `n` messages with `clients` concurrent clients; stop early once `deadline`
   * (performance.now()) has passed. Returns how many were created.
   */
  async fill(n: number, clients: number, deadline = Infinity, onProgress?: (made: number) => void): Promise<number> {
    let started = 0;
    let made = 0;
    const lane = async (): Promise<void> => {
      while (started < n && performance.now() < deadline) {
        started++;
        await this.create();
        made++;
        if (onProgress && made % 10_000 === 0) onProgress(made);
      }
    };
    await Promise.all(Array.from({ length: Math.min(clients, n) }, lane));
    return made;
  }

  /** Poll num_messages every `everyMs` until `cond` holds or `deadline` passes. */
  async pollCounts(cond: (c: Counts) => boolean, everyMs: number, deadline: number): Promise<{ counts: Counts; met: boolean }> {
    for (;;) {
      const counts = await this.counts();
      if (cond(counts)) return { counts, met: true };
      if (!this.running()) throw new Error('queue process died');
      if (performance.now() > deadline) return { counts, met: false };
      await sleep(everyMs);
    }
  }

  /** The same, for a condition that must come true: throws on a timeout. */
  async waitCounts(cond: (c: Counts) => boolean, everyMs: number, timeoutMs = 60_000): Promise<Counts> {
    const { counts, met } = await this.pollCounts(cond, everyMs, performance.now() + timeoutMs);
    if (!met) throw new Error(`timed out after ${secs(timeoutMs)}; num_messages = ${JSON.stringify(counts)}`);
    return counts;
  }
}

// ───────────────────────────── bare baselines ─────────────────────────────

/** A fresh directory with prep/ and que/ for a bare create loop. */
function bareDir(label: string): string {
  const dir = makeTemp(label);
  fs.mkdirSync(path.join(dir, 'prep'));
  fs.mkdirSync(path.join(dir, 'que'));
  return dir;
}

/** Bare durable creates per second: mkdir, write, fsync, rename into que/, fsync(que/). */
function bareCreateLoop(dir: string, from: number, n: number): number {
  const queFd = fs.openSync(path.join(dir, 'que'), 'r');
  try {
    const t0 = performance.now();
    for (let i = from; i < from + n; i++) {
      const tmp = path.join(dir, 'prep', `_${i}`);
      fs.mkdirSync(tmp);
      const fd = fs.openSync(path.join(tmp, 'msg'), 'w');
      fs.writeSync(fd, MSG_BODY);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      fs.renameSync(tmp, path.join(dir, 'que', String(i)));
      fs.fsyncSync(queFd);
    }
    return n / ((performance.now() - t0) / 1000);
  } finally {
    fs.closeSync(queFd);
  }
}

/**
 * Write back what the previous measurement left dirty before timing the next one, so
 * that its writeback is not charged to the next figure (the kernel writes dirty inodes
 * and blocks back some seconds later, in the middle of whatever runs then).
 */
function quiesce(): void {
  spawnSync('sync');
}

function bareCreatesSync(n: number): number {
  const dir = bareDir('bare-sync');
  bareCreateLoop(dir, 0, WARMUP);
  quiesce();
  return bareCreateLoop(dir, WARMUP, n);
}

/**
 * ext4 without a journal skips inodes freed in the last 60 s (360 s while their inode
 * table block is dirty) when it allocates one, so creating files is much slower right
 * after a mass delete. `sync` cleans the tables, which caps that at
 * 60 s; then, while a bare create loop runs under 60% of the rate
 * measured here (ARCH_BARE_CREATES), wait for it (at most 75 s).
 */
async function settleFilesystem(): Promise<void> {
  spawnSync('sync');
  const dir = bareDir('settle');
  let done = 0;
  const probe = (): number => {
    const rate = bareCreateLoop(dir, done, 300);
    done += 300;
    return rate;
  };
  let rate = probe();
  if (rate >= 0.6 * ARCH_BARE_CREATES) return;
  say(`
the filesystem is slow (bare creates at ${int(rate)}/s, ~${int(ARCH_BARE_CREATES)}/s expected): a recent mass delete? waiting for it to settle`);
  const until = performance.now() + 75_000;
  while (rate < 0.6 * ARCH_BARE_CREATES && performance.now() < until) {
    await sleep(10_000);
    rate = probe();
    say(`  bare creates: ${int(rate)}/s`);
  }
}

/** The same with fs.promises, `concurrency` in flight. */
async function bareCreatesAsync(n: number, concurrency: number): Promise<number> {
  const dir = bareDir('bare-async');
  const que = await fsp.open(path.join(dir, 'que'), 'r');
  const one = async (i: number): Promise<void> => {
    const tmp = path.join(dir, 'prep', `_${i}`);
    await fsp.mkdir(tmp);
    const fh = await fsp.open(path.join(tmp, 'msg'), 'w');
    await fh.write(MSG_BODY);
    await fh.sync();
    await fh.close();
    await fsp.rename(tmp, path.join(dir, 'que', String(i)));
    await que.sync();
  };
  await runConcurrent(WARMUP, concurrency, one);
  quiesce();
  const t0 = performance.now();
  await runConcurrent(n, concurrency, (i) => one(WARMUP + i));
  const rate = n / ((performance.now() - t0) / 1000);
  await que.close();
  return rate;
}

/** Spawn a script the way the queue does (same stdio shape, own process group) and wait for it. */
function spawnScript(script: string, cwd: string, logFd: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(script, [], { cwd, stdio: ['ignore', logFd, logFd, 'pipe', 'pipe'], detached: true });
    (child.stdio[3] as Readable | null)?.resume();
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${script} exited with ${code}`))));
  });
}

/** Direct spawns of the no-op script per second, `concurrency` in flight. */
async function directSpawnRate(n: number, concurrency: number): Promise<number> {
  const dir = makeTemp(`spawn-${concurrency}`);
  const script = writeScript(dir, 'noop.sh', NOOP_SCRIPT);
  const logFd = fs.openSync(path.join(dir, 'stdio.log'), 'a');
  try {
    await runConcurrent(50, concurrency, () => spawnScript(script, dir, logFd));
    quiesce();
    const t0 = performance.now();
    await runConcurrent(n, concurrency, () => spawnScript(script, dir, logFd));
    return n / ((performance.now() - t0) / 1000);
  } finally {
    fs.closeSync(logFd);
  }
}

function readStamp(file: string): number {
  const text = fs.readFileSync(file, 'utf8').trim().replace(',', '.');
  const sec = Number(text);
  if (!Number.isFinite(sec) || sec <= 0) throw new Error(`bad start stamp "${text}" in ${file}`);
  return sec * 1000;
}

async function waitForFile(file: string, timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!fs.existsSync(file)) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${file}`);
    await sleep(1);
  }
}

// ───────────────────────────── the figures ─────────────────────────────

interface Row {
  figure: string;
  measured: string;
  limit: string;
  goal: string;
  verdict: string;
}

const rows: Row[] = [];
const notes: string[] = [];

function verdict(ok: boolean): string {
  return ok ? 'PASS' : 'MISS';
}

function failedRow(figure: string, e: unknown): void {
  const message = e instanceof Error ? e.message : String(e);
  say(`  ERROR in ${figure}: ${message}`);
  rows.push({ figure, measured: 'ERROR', limit: '-', goal: '-', verdict: 'ERROR' });
  notes.push(`${figure}: ${message}`);
}

function capNote(what: string, capMs: number, did: number, of: number): void {
  if (did < of) notes.push(`${what}: stopped at its ${secs(capMs)} time cap after ${int(did)} of ${int(of)}; the rate is over those`);
}

/** 1. Durable creates over the socket, 1 and 16 clients, vs the bare loop. */
async function figureCreates(): Promise<void> {
  say(`\n[1] durable creates (${int(CREATES)} messages per variant, queue paused, fresh root each)`);
  const variants = [
    { clients: 1, bareWhat: 'sequential (sync calls)', bareShort: 'sequential', bare: async () => bareCreatesSync(CREATES), goal: 1.0 },
    { clients: CLIENTS, bareWhat: `${CLIENTS} in flight (fs.promises)`, bareShort: `${CLIENTS}-way`, bare: () => bareCreatesAsync(CREATES, CLIENTS), goal: 1.5 },
  ];
  for (const { clients, bareWhat, bareShort, bare, goal } of variants) {
    const bareCpu = process.cpuUsage();
    const limit = await bare();
    const bareCpuMs = cpuMs(process.cpuUsage(bareCpu));
    show(`bare loop, ${bareWhat}`, `${int(limit)} msg/s`);
    if (clients === 1 && limit < 0.6 * ARCH_BARE_CREATES) {
      notes.push(
        `the bare create loop ran at ${int(limit)}/s, well under the ~${int(ARCH_BARE_CREATES)}/s measured on these machines: ` +
          'the filesystem may still be slow after a recent mass delete (another run\'s cleanup?); every figure is next to its same-run limit',
      );
    }
    const who = `${clients} client${clients > 1 ? 's' : ''}`;
    const what = `1. creates, ${who}`;
    const q = new BenchQueue(`create-${clients}`, { workers: 0, script: 'noop.sh', paused: true });
    await q.start();
    await q.fill(WARMUP, clients);
    quiesce();
    const queueCpu0 = procCpuMs(q.pid);
    const clientCpu = process.cpuUsage();
    const t0 = performance.now();
    const made = await q.fill(CREATES, clients, t0 + CAP_MS.creates);
    const rate = made / ((performance.now() - t0) / 1000);
    const clientCpuMs = cpuMs(process.cpuUsage(clientCpu));
    const queueCpuMs = procCpuMs(q.pid) - queueCpu0;
    const c = await q.counts();
    await q.stop();
    show(`create_message, ${who}`, `${int(rate)} msg/s`);
    // Where the time goes: CPU (user + system) per message, against the two cores' worth.
    show(
      '  CPU per message (user + system)',
      `queue ${ms2(queueCpuMs / made)}, clients ${ms2(clientCpuMs / made)}; bare loop ${ms2(bareCpuMs / (CREATES + WARMUP))}; ` +
        `the machine's ${os.cpus().length} cores give ${ms2((os.cpus().length * 1000) / rate)} per message at this rate`,
    );
    capNote(what, CAP_MS.creates, made, CREATES);
    if (c.que !== made + WARMUP) notes.push(`${what}: made ${made + WARMUP}, num_messages says que = ${c.que}`);
    rows.push({
      figure: what,
      measured: `${int(rate)} msg/s (${pct(rate, limit)} of limit)`,
      limit: `bare loop, ${bareShort}: ${int(limit)} msg/s`,
      goal: `>= ${goal.toFixed(1)}x limit`,
      verdict: verdict(rate >= goal * limit),
    });
  }
}

/** Milliseconds of CPU in a process.cpuUsage() difference. */
function cpuMs(u: NodeJS.CpuUsage): number {
  return (u.user + u.system) / 1000;
}

/** Milliseconds of CPU (user + system) a process has used so far, from /proc (clock ticks of 10 ms). */
function procCpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** The tmpfs of /dev/shm, where figure 2 is measured once more without the disk's costs. */
const SHM = '/dev/shm';

/**
 * 2. Processing throughput with 1 and 4 workers, vs direct spawns. The spawn rate of this
 * machine drifts by a third and more within minutes, so it is measured just before and
 * just after each drain, and the drain is set against the mean of the two.
 */
async function figureProcessing(): Promise<void> {
  say(`\n[2] processing throughput (${int(PROCESS_MSGS)} messages queued while paused, no-op script, exec_prefix "")`);
  for (const workers of [1, 4]) {
    const before = await directSpawnRate(PROCESS_MSGS, workers);
    show(`direct spawn, ${workers} in flight`, `${int(before)} msg/s`);
    const rate = await processingRate(`process-${workers}`, workers);
    const after = await directSpawnRate(PROCESS_MSGS, workers);
    show(`direct spawn, ${workers} in flight, again`, `${int(after)} msg/s`);
    const direct = (before + after) / 2;
    const limit = `direct spawn, ${workers} in flight: ${int(direct)}/s (${int(before)}, then ${int(after)})`;
    rows.push({
      figure: `2. processing, ${workers} worker${workers > 1 ? 's' : ''}`,
      measured: `${int(rate)} msg/s (${pct(rate, direct)} of limit)`,
      limit,
      goal: workers === 4 ? '>= 85% of limit' : '(info)',
      verdict: workers === 4 ? verdict(rate >= 0.85 * direct) : '-',
    });
    if (workers === 4 && fs.existsSync(SHM) && fsTypeOf(SHM).startsWith('tmpfs')) {
      // The same queue on tmpfs: what the engine costs, without creating files on a disk.
      const onTmpfs = await processingRate('process-tmpfs', workers, SHM);
      const third = await directSpawnRate(PROCESS_MSGS, workers);
      show(`direct spawn, ${workers} in flight, after tmpfs`, `${int(third)} msg/s`);
      const around = (after + third) / 2;
      rows.push({
        figure: '2. processing, 4 workers, tmpfs',
        measured: `${int(onTmpfs)} msg/s (${pct(onTmpfs, around)} of limit)`,
        limit: `direct spawn, 4 in flight: ${int(around)}/s (${int(after)}, then ${int(third)})`,
        goal: '(info: no disk)',
        verdict: '-',
      });
    }
  }
}

/** Runs per second of a queue draining PROCESS_MSGS messages queued while it was paused. */
async function processingRate(label: string, workers: number, base?: string): Promise<number> {
  const what = `2. processing, ${workers} worker(s)${base ? ` on ${base}` : ''}`;
  const q = new BenchQueue(label, { workers, script: 'noop.sh', paused: true, ...(base ? { base } : {}) });
  await q.start();
  const queued = await q.fill(PROCESS_MSGS, CLIENTS, performance.now() + CAP_MS.fill);
  capNote(`2. queueing ${int(PROCESS_MSGS)} for ${workers} worker(s)`, CAP_MS.fill, queued, PROCESS_MSGS);
  const before = await q.counts();
  if (before.que !== queued) throw new Error(`queued ${queued}, num_messages says ${JSON.stringify(before)}`);
  quiesce();
  const t0 = performance.now();
  await q.setPaused(false);
  const { counts } = await q.pollCounts((c) => c.done + c.err >= queued, 20, t0 + CAP_MS.drain);
  const finished = counts.done + counts.err;
  const rate = finished / ((performance.now() - t0) / 1000);
  if (counts.err > 0) notes.push(`${what}: ${await q.errNote(counts.err)}`);
  await q.stop();
  show(`queue, ${workers} worker${workers > 1 ? 's' : ''}${base ? ` (root on ${base})` : ''}`, `${int(rate)} msg/s`);
  capNote(what, CAP_MS.drain, finished, queued);
  return rate;
}

/**
 * `--duel=<queue-main.js>`: this build and another one drain PROCESS_MSGS messages each
 * with 4 workers, both at once, in DUEL_ROUNDS rounds (each round starts the other one
 * first), and are compared by how many each has finished when the first is through. Run
 * side by side, the two share the machine's drift, which one after the other they do not
 * (here the spawn rate can halve within an hour). The scheduler shares the CPU by
 * thread, so a build with more processes or busy threads than the other gets more of it:
 * compare builds with the same process structure.
 */
async function duel(other: string): Promise<void> {
  if (!fs.existsSync(other)) throw new Error(`--duel: ${other} is missing`);
  // The other build's queue processes run with its own flags (its install-root.js, beside its queue-main.js).
  const { QUEUE_NODE_FLAGS: otherFlags } = (await import(pathToFileURL(path.join(path.dirname(other), '../lib/install-root.js')).href)) as {
    QUEUE_NODE_FLAGS: readonly string[];
  };
  say(`\n[duel] this build (${QUEUE_MAIN}) against ${other}: ${int(PROCESS_MSGS)} messages each, 4 workers, drained side by side`);
  say(`  node flags: this build ${QUEUE_NODE_FLAGS.join(' ') || '(none)'}, other build ${otherFlags.join(' ') || '(none)'}`);
  const ratios: number[] = [];
  for (let round = 0; round < DUEL_ROUNDS; round++) {
    const mine = new BenchQueue(`duel-this-${round}`, { workers: 4, script: 'noop.sh', paused: true });
    const theirs = new BenchQueue(`duel-other-${round}`, { workers: 4, script: 'noop.sh', paused: true, main: other, nodeFlags: otherFlags });
    for (const q of [mine, theirs]) {
      await q.start();
      const made = await q.fill(PROCESS_MSGS, CLIENTS, performance.now() + CAP_MS.fill);
      if (made < PROCESS_MSGS) throw new Error(`queue "${q.label}" took only ${made} messages within ${secs(CAP_MS.fill)}`);
    }
    quiesce();
    const order = round % 2 === 0 ? [mine, theirs] : [theirs, mine];
    for (const q of order) await q.setPaused(false);
    const t0 = performance.now();
    // Compared when the first is through: after that the other has the machine alone.
    const finished = (c: Counts): number => c.done + c.err;
    let counts: Counts[];
    for (;;) {
      counts = await Promise.all([mine.counts(), theirs.counts()]);
      if (counts.some((c) => finished(c) >= PROCESS_MSGS)) break;
      if (performance.now() > t0 + CAP_MS.drain) throw new Error(`neither queue drained within ${secs(CAP_MS.drain)}`);
      await sleep(20);
    }
    const seconds = (performance.now() - t0) / 1000;
    for (const q of [mine, theirs]) await q.stop();
    const [cMine, cOther] = counts as [Counts, Counts];
    for (const [q, c] of [[mine, cMine], [theirs, cOther]] as const) if (c.err > 0) notes.push(`duel, round ${round + 1}, ${q.label}: ${c.err} messages went to err`);
    ratios.push(finished(cMine) / finished(cOther));
    show(`round ${round + 1}: this build, other build`, `${int(finished(cMine) / seconds)}, ${int(finished(cOther) / seconds)} msg/s`);
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  rows.push({
    figure: 'duel: this build / other',
    measured: `${percentile(sorted, 50).toFixed(3)}x the other's speed (median of ${ratios.map((r) => r.toFixed(3)).join(', ')})`,
    limit: 'the other build, same moments',
    goal: '(info)',
    verdict: '-',
  });
}

/** 3. create_message → script start, one message at a time, vs a bare spawn. */
async function figureLatency(): Promise<void> {
  say(`\n[3] commit -> script start latency (${LATENCY_MSGS} messages one at a time after ${LATENCY_WARMUP} warm-up; the script stamps bash's $EPOCHREALTIME)`);
  const dir = makeTemp('latency-spawn');
  const script = writeScript(dir, 'stamp.sh', STAMP_SCRIPT);
  const logFd = fs.openSync(path.join(dir, 'stdio.log'), 'a');
  const bare: number[] = [];
  try {
    const clock = calibratedClock();
    for (let i = 0; i < LATENCY_WARMUP + LATENCY_MSGS; i++) {
      const sent = clock();
      await spawnScript(script, dir, logFd);
      if (i >= LATENCY_WARMUP) bare.push(readStamp(path.join(dir, 'start')) - sent);
      await sleep(5);
    }
  } finally {
    fs.closeSync(logFd);
  }
  bare.sort((a, b) => a - b);
  show('bare spawn -> script start', `p50 ${ms2(percentile(bare, 50))}  p99 ${ms2(percentile(bare, 99))}`);

  const q = new BenchQueue('latency', { workers: 1, script: 'stamp.sh', paused: false });
  await q.start();
  const lat: number[] = [];
  const clock = calibratedClock();
  const deadline = performance.now() + CAP_MS.latency;
  for (let i = 0; i < LATENCY_WARMUP + LATENCY_MSGS && performance.now() < deadline; i++) {
    const sent = clock();
    const id = await q.create();
    const stamp = path.join(q.layout.msgDir('done', id), 'job', 'start');
    await waitForFile(stamp, 10_000);
    if (i >= LATENCY_WARMUP) lat.push(readStamp(stamp) - sent);
    await sleep(5);
  }
  const c = await q.counts();
  if (c.err > 0) notes.push(`3. latency: ${await q.errNote(c.err)}`);
  await q.stop();
  if (lat.length === 0) throw new Error(`no sample after the warm-up within ${secs(CAP_MS.latency)}`);
  capNote('3. latency', CAP_MS.latency, lat.length, LATENCY_MSGS);
  lat.sort((a, b) => a - b);
  const p50 = percentile(lat, 50);
  const p99 = percentile(lat, 99);
  show('create_message -> script start', `p50 ${ms2(p50)}  p99 ${ms2(p99)}  (max ${ms2(lat[lat.length - 1] ?? NaN)})`);
  for (const [p, measured, overMs] of [[50, p50, 1], [99, p99, 3]] as const) {
    const limit = percentile(bare, p);
    rows.push({
      figure: `3. commit -> start, p${p}`,
      measured: ms2(measured),
      limit: `bare spawn p${p}: ${ms2(limit)}`,
      goal: `<= limit + ${overMs} ms`,
      verdict: verdict(measured <= limit + overMs),
    });
  }
}

/**
 * Drain windows: un-pause, time DRAIN_WINDOW completions, pause, let the runs finish;
 * DRAIN_REPS times (refilling the queue with DRAIN_WINDOW messages first, if asked).
 */
async function drainRate(q: BenchQueue, refill: boolean, what: string): Promise<number> {
  let totalMs = 0;
  let finished = 0;
  const deadline = performance.now() + CAP_MS.drainWindows;
  for (let rep = 0; rep < DRAIN_REPS && performance.now() < deadline; rep++) {
    if (refill) {
      await q.fill(DRAIN_WINDOW, CLIENTS);
      await q.waitCounts((c) => c.que === DRAIN_WINDOW, 10);
    }
    const c0 = await q.counts();
    const t0 = performance.now();
    await q.setPaused(false);
    const { counts } = await q.pollCounts((c) => c.done + c.err >= c0.done + c0.err + DRAIN_WINDOW, 10, deadline);
    totalMs += performance.now() - t0;
    finished += counts.done + counts.err - c0.done - c0.err;
    await q.setPaused(true);
    await q.waitCounts((c) => c.run === 0, 10);
  }
  capNote(what, CAP_MS.drainWindows, finished, DRAIN_REPS * DRAIN_WINDOW);
  return finished / (totalMs / 1000);
}

/** 4. 100,000 waiting: recovery, drain rate, RSS. */
async function figureBigQueue(): Promise<void> {
  say(`\n[4] a queue with ${int(BIG_QUEUE)} waiting messages (4 workers, no-op script)`);
  const big = new BenchQueue('100k', { workers: 4, script: 'noop.sh', paused: true });
  await big.start();
  const t0 = performance.now();
  const made = await big.fill(BIG_QUEUE, CLIENTS, t0 + CAP_MS.bigFill, (n) =>
    say(`  filling: ${int(n)} created (${int(n / ((performance.now() - t0) / 1000))} msg/s)`),
  );
  const fillRate = made / ((performance.now() - t0) / 1000);
  const filled = await big.counts();
  const rssFilled = rssMb(big.pid);
  say(`  filled with ${CLIENTS} clients at ${int(fillRate)} msg/s; que = ${int(filled.que)}; RSS ${rssFilled.toFixed(1)} MB`);
  if (made < BIG_QUEUE) {
    notes.push(
      `4. the fill stopped at its ${secs(CAP_MS.bigFill)} time cap with ${int(made)} of ${int(BIG_QUEUE)} created ` +
        `(${int(fillRate)} msg/s): figure 4 was measured with ${int(filled.que)} waiting`,
    );
  }
  if (filled.que !== made) notes.push(`4. created ${made}, num_messages says que = ${filled.que}`);
  const size = int(filled.que);
  await figureWebPages(big, filled.que);

  // (a) recovery: kill -9, cold cache, restart; process start → first entry in run/.
  await big.kill9();
  big.setPauseFlag(false);
  let cold = dropCaches();
  let t = performance.now();
  const listed = fs.readdirSync(big.layout.stateDir('que')).length;
  const listingMs = performance.now() - t;
  cold = dropCaches() && cold;
  t = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  const nodeMs = performance.now() - t;
  cold = dropCaches() && cold;
  const cache = cold ? 'cold cache' : 'warm cache: drop_caches refused';
  say(`  bare listing of que/ (${int(listed)} entries, ${cache}): ${secs(listingMs)}; node -e 0: ${secs(nodeMs)}`);
  let firstRunAt: number | undefined;
  const watcher = fs.watch(big.layout.stateDir('run'), () => {
    firstRunAt ??= performance.now();
  });
  let recoveryMs: number;
  let pingMs: number;
  try {
    t = performance.now();
    await big.start(120_000);
    pingMs = performance.now() - t;
    const until = performance.now() + 60_000;
    while (firstRunAt === undefined) {
      if (performance.now() > until) throw new Error('no message reached run/ within 60 s of the restart');
      await sleep(1);
    }
    recoveryMs = firstRunAt - t;
  } finally {
    watcher.close();
  }
  say(`  restart (${cache}): first message in run/ after ${secs(recoveryMs)}; ping answered after ${secs(pingMs)}`);
  rows.push({
    figure: `4a. recovery, ${size} waiting`,
    measured: `${secs(recoveryMs)} (${cold ? 'cold' : 'WARM cache'})`,
    limit: `listing ${secs(listingMs)} + node ${secs(nodeMs)}`,
    goal: '<= 0.8 s',
    verdict: verdict(recoveryMs <= 800),
  });

  // (b) drain rate with ~100k waiting, then with 500 waiting, same windows.
  await big.setPaused(true);
  const recovered = await big.waitCounts((c) => c.run === 0, 10);
  if (recovered.que + recovered.done + recovered.err !== filled.que) {
    notes.push(`4a. lost messages in the restart: ${int(filled.que)} waiting before, ${JSON.stringify(recovered)} after`);
  }
  const bigRate = await drainRate(big, false, `4b. drain, ${size} waiting`);
  const after = await big.counts();
  const rssBig = rssMb(big.pid);
  const spawners = spawnersMemory(big.pid);
  if (after.err > 0) notes.push(`4. ${await big.errNote(after.err)}`);
  await big.stop();
  show(`drain with ~${int(after.que)} waiting`, `${int(bigRate)} msg/s (windows of ${DRAIN_WINDOW} completions)`);

  const small = new BenchQueue('500', { workers: 4, script: 'noop.sh', paused: true });
  await small.start();
  const smallRate = await drainRate(small, true, `4b. drain, ${DRAIN_WINDOW} waiting`);
  const rssSmall = rssMb(small.pid);
  await small.stop();
  show(`drain with ${DRAIN_WINDOW} waiting`, `${int(smallRate)} msg/s (windows of ${DRAIN_WINDOW} completions)`);
  rows.push({
    figure: `4b. drain, ${size} waiting`,
    measured: `${int(bigRate)} msg/s (${pct(bigRate, smallRate)} of limit)`,
    limit: `${DRAIN_WINDOW} waiting: ${int(smallRate)} msg/s`,
    goal: '>= 90% of limit',
    verdict: verdict(bigRate >= 0.9 * smallRate),
  });

  // (c) RSS: the larger of "just filled" and "restarted, then drained a little".
  const rss = Math.max(rssFilled, rssBig);
  say(`  RSS: ${rssFilled.toFixed(1)} MB filled, ${rssBig.toFixed(1)} MB after the restart and drain; a queue with 0 waiting: ${rssSmall.toFixed(1)} MB`);
  const spawnerText =
    `its ${spawners.n} spawner process(es) hold ${spawners.rssMb.toFixed(1)} MB resident in all, ` +
    `${spawners.anonMb.toFixed(1)} MB of it their own memory (the rest is the node binary, shared)`;
  show('spawners, after the drain', `${spawners.rssMb.toFixed(1)} MB resident, ${spawners.anonMb.toFixed(1)} MB their own`);
  notes.push(`4c. the figure is the queue process alone; ${spawnerText}`);
  rows.push({
    figure: `4c. RSS, ${size} waiting`,
    measured: `${rss.toFixed(1)} MB`,
    limit: `queue, 0 waiting: ${rssSmall.toFixed(1)} MB`,
    goal: '<= 150 MB',
    verdict: verdict(rss <= 150),
  });
}

/** Median and maximum of `reps` timed GETs of `url` (each a new connection, as the web wants). */
async function timeGets(url: string, reps: number): Promise<{ p50: number; max: number }> {
  const times: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${(await res.text()).slice(0, 200)}`);
    await res.arrayBuffer();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), max: times[times.length - 1]! };
}

/** A web process on a bench queue's root (see startWebOn). */
interface BenchWeb {
  base: string;
  pid: number;
  stop(): void;
}

/**
 * The web process on a bench queue's root. The web answers only while
 * config/queuemgr.pid names a live rq-mgr; the queue here is the bench's own process, so
 * a stand-in holds the pid file: a sleeping node whose command line says rq-mgr, which is
 * all livePid checks (pid-file.ts). The routes measured ask only the queue.
 */
async function startWebOn(q: BenchQueue): Promise<BenchWeb> {
  const standIn = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)', 'rq-mgr'], { stdio: 'ignore' });
  fs.writeFileSync(rootLayout(q.root).mgrPidFile, `${standIn.pid}\n`);
  const port = await freePort();
  writeMainConfig(q.root, port);
  // As rq-mgr does: an IPC channel, on which the web says when it listens.
  const web = spawn(process.execPath, [WEB_MAIN], { env: { ...process.env, RQ_ROOT: q.root }, stdio: ['ignore', 'ignore', 'ignore', 'ipc'] });
  const stop = (): void => {
    web.kill('SIGKILL');
    standIn.kill('SIGKILL');
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the web process did not listen within 10 s')), 10_000);
      web.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      web.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the web process exited (${code}) before it listened`));
      });
    });
  } catch (e) {
    stop();
    throw e;
  }
  return { base: `http://127.0.0.1:${port}`, pid: web.pid!, stop };
}

/** 4d/4e: the web process on the big queue's root, its queue page and search. */
async function figureWebPages(big: BenchQueue, waiting: number): Promise<void> {
  const size = int(waiting);
  const web = await startWebOn(big);
  const { base } = web;
  try {
    const bare = await timeGets(`${base}/css/rq.css`, WEB_PAGE_REPS);
    const lastPage = Math.max(1, Math.ceil(waiting / 50));
    const pages = [1, Math.ceil(lastPage / 2), lastPage];
    let worst = { p50: 0, max: 0 };
    for (const page of pages) {
      const t = await timeGets(`${base}/q/${big.name}?state=que&page=${page}`, WEB_PAGE_REPS);
      show(`queue page ${int(page)} of ${int(lastPage)}`, `p50 ${ms2(t.p50)}, max ${ms2(t.max)}`);
      if (t.max > worst.max) worst = t;
    }
    rows.push({
      figure: `4d. queue page, ${size} waiting`,
      measured: `worst page: p50 ${ms2(worst.p50)}, max ${ms2(worst.max)}`,
      limit: `static file: p50 ${ms2(bare.p50)}`,
      goal: '<= 300 ms',
      verdict: verdict(worst.max <= 300),
    });
    const search = await timeGets(`${base}/search?x_format=html&name=${big.name}&q=no-such-text`, 5);
    show('free-text search, no match', `p50 ${ms2(search.p50)}, max ${ms2(search.max)}`);
    rows.push({
      figure: `4e. search, ${size} waiting, no match`,
      measured: `p50 ${ms2(search.p50)}, max ${ms2(search.max)}`,
      limit: `static file: p50 ${ms2(bare.p50)}`,
      goal: '<= 300 ms',
      verdict: verdict(search.max <= 300),
    });
  } finally {
    web.stop();
  }
}

/**
 * 7. Memory. (a) A queue process with BIG_PARAM_MSGS waiting messages whose param1 is
 * 1 MiB, just filled and after a kill -9 and restart, against a queue process with as
 * many waiting messages without params (same run). (b) BIG_BODIES concurrent form posts
 * of 60 MiB each to `new_message` through the web: the web process's peak RSS (VmHWM)
 * against its RSS before them, with what each post was answered; and the queue
 * process's peak and its RSS 15 s after, against its RSS before them.
 */
async function figureMemory(): Promise<void> {
  const n = int(BIG_PARAM_MSGS);
  say(`\n[7] memory: ${n} waiting messages with a 1 MiB param1; ${BIG_BODIES} concurrent 60 MiB bodies through the web`);
  const rssOf = async (label: string, fields: object): Promise<{ filled: number; restarted: number }> => {
    const q = new BenchQueue(label, { workers: 1, script: 'noop.sh', paused: true });
    await q.start();
    await runConcurrent(BIG_PARAM_MSGS, 4, async () => void (await q.create(fields)));
    await sleep(1_000);
    const filled = rssMb(q.pid);
    await q.kill9();
    await q.start(120_000);
    const c = await q.waitCounts((counts) => counts.que === BIG_PARAM_MSGS, 100);
    await sleep(1_000);
    const restarted = rssMb(q.pid);
    if (c.que !== BIG_PARAM_MSGS) notes.push(`7a. ${label}: ${BIG_PARAM_MSGS} created, que = ${c.que} after the restart`);
    await q.stop();
    return { filled, restarted };
  };
  const plain = await rssOf('mem-plain', {});
  show(`${n} waiting, no params`, `${plain.filled.toFixed(1)} MB filled, ${plain.restarted.toFixed(1)} MB restarted`);
  const big = await rssOf('mem-params', { param1: 'x'.repeat(BIG_PARAM_BYTES) });
  show(`${n} waiting, 1 MiB param1 each`, `${big.filled.toFixed(1)} MB filled, ${big.restarted.toFixed(1)} MB restarted`);
  const limit = Math.max(plain.filled, plain.restarted);
  const measured = Math.max(big.filled, big.restarted);
  rows.push({
    figure: `7a. queue RSS, ${n} waiting with 1 MiB params`,
    measured: `${measured.toFixed(1)} MB (filled ${big.filled.toFixed(1)}, restarted ${big.restarted.toFixed(1)})`,
    limit: `${n} waiting, no params: ${limit.toFixed(1)} MB`,
    goal: `<= limit + ${BIG_PARAMS_GOAL_MB} MB`,
    verdict: verdict(measured <= limit + BIG_PARAMS_GOAL_MB),
  });

  const q = new BenchQueue('mem-web', { workers: 1, script: 'noop.sh', paused: true });
  await q.start();
  const web = await startWebOn(q);
  try {
    const [webBefore, queueBefore] = [rssMb(web.pid), rssMb(q.pid)];
    const mesg = JSON.stringify({ dest: q.name, param1: 'x'.repeat(BIG_BODY_BYTES - 100) });
    const body = `x_format=json&mesg=${encodeURIComponent(mesg)}`;
    const post = async (): Promise<number> => {
      const res = await fetch(`${web.base}/q/${q.name}/new_message`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
      await res.arrayBuffer();
      return res.status;
    };
    const statuses = await Promise.all(Array.from({ length: BIG_BODIES }, post));
    // V8 gives back a heap that has shrunk some seconds after the work (its memory reducer), not at once.
    await sleep(AFTER_BODIES_MS);
    const webPeak = rssMb(web.pid, 'VmHWM');
    const [queuePeak, queueAfter] = [rssMb(q.pid, 'VmHWM'), rssMb(q.pid)];
    const answered = [...new Set(statuses)].sort().map((st) => `${statuses.filter((x) => x === st).length} x ${st}`).join(', ');
    show(`web, ${BIG_BODIES} x 60 MiB posts (${answered})`, `peak ${webPeak.toFixed(1)} MB, ${webBefore.toFixed(1)} MB before`);
    show('queue, after those posts', `peak ${queuePeak.toFixed(1)} MB, ${queueAfter.toFixed(1)} MB ${secs(AFTER_BODIES_MS)} after, ${queueBefore.toFixed(1)} MB before`);
    rows.push({
      figure: `7b. web peak RSS, ${BIG_BODIES} x 60 MiB posts`,
      measured: `${webPeak.toFixed(1)} MB (answers: ${answered})`,
      limit: `web before them: ${webBefore.toFixed(1)} MB`,
      goal: '(info)',
      verdict: '-',
    });
    rows.push({
      figure: '7c. queue RSS after those posts',
      measured: `${queueAfter.toFixed(1)} MB ${secs(AFTER_BODIES_MS)} after (peak ${queuePeak.toFixed(1)} MB)`,
      limit: `queue before them: ${queueBefore.toFixed(1)} MB`,
      goal: '(info)',
      verdict: '-',
    });
  } finally {
    web.stop();
    await q.stop();
  }
}

// ───────────────────────────── the run ─────────────────────────────

/** CPU clock ticks: the whole machine busy, and this process with its reaped children. */
interface CpuSample {
  at: number;
  machineBusy: number;
  own: number;
}

function cpuSample(): CpuSample {
  const total = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
  // user nice system idle iowait irq softirq steal
  const busy = (total[0] ?? 0) + (total[1] ?? 0) + (total[2] ?? 0) + (total[5] ?? 0) + (total[6] ?? 0);
  const self = fs.readFileSync('/proc/self/stat', 'utf8');
  const f = self.slice(self.lastIndexOf(')') + 2).split(' ').map(Number);
  // utime stime cutime cstime are fields 14-17, i.e. 11-14 after the ")"
  const own = (f[11] ?? 0) + (f[12] ?? 0) + (f[13] ?? 0) + (f[14] ?? 0);
  return { at: performance.now(), machineBusy: busy, own };
}

/**
 * The share of the machine's CPU that other processes used between two samples (our
 * queue processes and scripts count as ours once reaped, which every figure does).
 */
function foreignCpuShare(a: CpuSample, b: CpuSample): number {
  const ticksPerSec = 100; // USER_HZ
  const capacity = ((b.at - a.at) / 1000) * ticksPerSec * os.availableParallelism();
  const foreign = b.machineBusy - a.machineBusy - (b.own - a.own);
  return capacity > 0 ? Math.max(0, foreign / capacity) : 0;
}

function machineFacts(): string[] {
  const cpu = os.cpus()[0]?.model ?? '?';
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  return [
    `nproc: ${os.availableParallelism()} (${cpu}); load average ${load}`,
    `memory: ${int(os.totalmem() / 2 ** 20)} MB`,
    `node: ${process.version}, UV_THREADPOOL_SIZE=${process.env['UV_THREADPOOL_SIZE'] ?? '4'}`,
    `kernel: ${os.type()} ${os.release()}`,
    `tmpdir: ${os.tmpdir()} on ${fsTypeOf(fs.realpathSync(os.tmpdir()))}`,
    `queue process: ${QUEUE_MAIN}`,
  ];
}

function printTable(): void {
  const head: Row = { figure: 'figure', measured: 'measured', limit: 'machine limit (same run)', goal: 'goal', verdict: 'verdict' };
  const cols = ['figure', 'measured', 'limit', 'goal', 'verdict'] as const;
  const width = Object.fromEntries(cols.map((k) => [k, Math.max(...[head, ...rows].map((r) => r[k].length))])) as Record<
    (typeof cols)[number],
    number
  >;
  const line = (r: Row): string => cols.map((k) => r[k].padEnd(width[k])).join(' | ');
  say(line(head));
  say(cols.map((k) => '-'.repeat(width[k])).join('-|-'));
  for (const r of rows) say(line(r));
}

/** Remove every temp dir, then `sync`, so the next run's creates are slow for 60 s, not 360 s (see settleFilesystem). */
function removeTempDirs(): void {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  spawnSync('sync');
}

function killQueues(): void {
  for (const q of liveQueues) {
    try {
      process.kill(q.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  process.on('SIGINT', () => {
    killQueues();
    removeTempDirs();
    process.exit(130);
  });
  say('rq benchmark: each figure next to this machine\'s limit, measured in the same run');
  for (const fact of machineFacts()) say(`  ${fact}`);
  if (!fs.existsSync(QUEUE_MAIN)) throw new Error(`${QUEUE_MAIN} is missing: run npm run build`);
  await settleFilesystem();

  const pullHelpers: PullBenchHelpers = {
    makeInstall,
    say,
    show,
    addRow: (row) => rows.push(row),
    note: (text) => notes.push(text),
    bareAsyncRate: () => bareCreatesAsync(CREATES, CLIENTS),
    runConcurrent,
    percentile,
    quick: QUICK,
  };
  const only = process.argv.find((a) => a.startsWith('--only='))?.slice('--only='.length);
  const other = process.argv.find((a) => a.startsWith('--duel='))?.slice('--duel='.length);
  const allFigures: Array<[string, () => Promise<void>]> = [
    ['1. creates', figureCreates],
    ['2. processing', figureProcessing],
    ['3. latency', figureLatency],
    ['4. 100k waiting', figureBigQueue],
    ['5. pull model', () => figurePull(pullHelpers)],
    ['6. workq', () => figureWorkq(pullHelpers)],
    ['7. memory', figureMemory],
    ['8. hosting', () => figureHosting(pullHelpers)],
    ['9. lists', () => figureLists(pullHelpers)],
    ['10. bulk', () => figureBulk(pullHelpers)],
    ['11. CLI', () => figureCli(pullHelpers)],
    ['12. start', () => figureStart(pullHelpers)],
  ];
  const figures = other === undefined ? allFigures.filter(([name]) => only === undefined || name.startsWith(only)) : [['duel', () => duel(path.resolve(other))] as const];
  try {
    for (const [name, run] of figures) {
      const cpu0 = cpuSample();
      try {
        await run();
      } catch (e) {
        failedRow(name, e);
      }
      const foreign = foreignCpuShare(cpu0, cpuSample());
      if (foreign >= 0.05) {
        say(`  (other processes used ${pct(foreign, 1)} of the machine's CPU during this figure)`);
        notes.push(`${name}: other processes used ${pct(foreign, 1)} of the machine's CPU meanwhile; figures and limits are noisier`);
      }
    }
  } finally {
    for (const q of [...liveQueues]) await q.stop();
    const t = performance.now();
    const n = tempDirs.length;
    removeTempDirs();
    say(`\ncleanup: removed ${n} temp roots in ${secs(performance.now() - t)}`);
  }

  say(`\nrq benchmark results (${secs(performance.now() - started)} in all)`);
  for (const fact of machineFacts()) say(`  ${fact}`);
  say('');
  printTable();
  for (const q of allQueues) {
    if (q.complaints.length === 0) continue;
    notes.push(`queue "${q.label}" logged ${q.complaints.length} line(s) at warn or worse; first: ${q.complaints[0]}`);
  }
  if (QUICK) notes.push('--quick: a smoke run at a tenth of the sizes; the figures are not the benchmark');
  if (notes.length > 0) {
    say('\nnotes:');
    for (const n of notes) say(`  - ${n}`);
  }
}

if (process.env['UV_THREADPOOL_SIZE'] === THREADPOOL) {
  await main();
} else {
  // Re-run with the queue process's thread pool size, so the fs.promises baseline is fair.
  // On ^C the child cleans up; this process waits for it instead of dying first.
  process.on('SIGINT', () => {});
  const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, UV_THREADPOOL_SIZE: THREADPOOL },
  });
  process.exit(r.status ?? 1);
}
