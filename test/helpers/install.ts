/**
 * Test support: a temporary install root with real queue processes and RQ's socket
 * framing, to queue processes and to rq-mgr. Each test gets its own root under
 * os.tmpdir() (useTestRoot), or the tests of a describe share one (sharedRoot); it is
 * removed when they pass and kept (its path printed) when one fails, so the evidence
 * stays.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, onTestFailed, onTestFinished } from 'vitest';
import { isOk, rpcCall } from '../../src/client/rpc.js';
import { encodePacket } from '../../src/rpc/wire.js';
import { REPO, runBin, type CliResult } from './run-bin.js';

export { REPO };

const FIXTURES = path.join(REPO, 'test/fixtures/scripts');

export interface QueueSpec {
  name: string;
  /** A fixture name (test/fixtures/scripts/<script>) or a path relative to the root. */
  script?: string;
  num_workers?: number;
  exec_prefix?: string | null;
  [key: string]: unknown;
}

export class TestRoot {
  readonly root: string;
  private readonly procs = new Map<string, ChildProcess>();
  private readonly outputs = new Map<string, () => string>();

  /** A new root in `parent` (default: the system's temp directory). */
  constructor(parent = os.tmpdir()) {
    this.root = fs.mkdtempSync(path.join(parent, 'rq-test-'));
    fs.mkdirSync(path.join(this.root, 'config'));
    fs.mkdirSync(path.join(this.root, 'queues'));
    // Each root has its own upload temp dir, so a test can see exactly what was left in it.
    fs.mkdirSync(path.join(this.root, 'tmp'));
    fs.symlinkSync('queues', path.join(this.root, 'queue'));
    // `scripts` links to the fixtures outside the root, so queues created over HTTP may run them only by `script_dirs`.
    fs.writeFileSync(
      path.join(this.root, 'config/config.json'),
      JSON.stringify({ env: 'test', host: '127.0.0.1', port: '3333', addr: '127.0.0.1', tmpdir: path.join(this.root, 'tmp'), allow_new_queue: true, script_dirs: [FIXTURES] }),
    );
    fs.symlinkSync(FIXTURES, path.join(this.root, 'scripts'));
  }

  /** Write these keys into config/config.json, keeping the others. */
  setMainConfig(extra: Record<string, unknown>): void {
    const file = path.join(this.root, 'config/config.json');
    fs.writeFileSync(file, JSON.stringify({ ...(JSON.parse(fs.readFileSync(file, 'utf8')) as object), ...extra }));
  }

  /** Use a free port on 127.0.0.1 for the web process; returns it. */
  async usePort(): Promise<number> {
    const port = await freePort();
    this.setMainConfig({ port: String(port) });
    return port;
  }

  /** Run one of the repository's bin/ commands against this root. */
  bin(command: string, args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
    return runBin(`bin/${command}`, args, { RQ_ROOT: this.root, RQ_FATAL_DELAY_MS: '0', RQ_RESTART_BACKOFF_MS: '5', ...env });
  }

  /** The pid in a pid file, or undefined. */
  pidIn(relPath: string): number | undefined {
    try {
      return Number.parseInt(fs.readFileSync(path.join(this.root, relPath), 'utf8'), 10);
    } catch {
      return undefined;
    }
  }

  queueDir(name: string): string {
    return path.join(this.root, 'queues', name);
  }

  /** Write a queue's directories and config.json (scripts from the fixtures by name). */
  addQueue(spec: QueueSpec): void {
    const dir = this.queueDir(spec.name);
    for (const s of ['prep', 'que', 'run', 'done', 'err', 'relayed']) fs.mkdirSync(path.join(dir, s), { recursive: true });
    this.writeQueueConfig(spec);
  }

  /** Rewrite a running queue's config.json from `spec` (as addQueue does), then SIGHUP its process to reload it. */
  reconfigure(spec: QueueSpec): void {
    this.writeQueueConfig(spec);
    const pid = this.pidIn(`queues/${spec.name}/queue.pid`);
    if (pid === undefined) throw new Error(`reconfigure: queue ${spec.name} has no pid file`);
    process.kill(pid, 'SIGHUP');
  }

  private writeQueueConfig(spec: QueueSpec): void {
    const config = { num_workers: 1, exec_prefix: '', ...spec, script: spec.script?.includes('/') ? spec.script : `./scripts/${spec.script ?? 'done.sh'}` };
    fs.writeFileSync(path.join(this.queueDir(spec.name), 'config.json'), JSON.stringify(config));
  }

  /** Start the queue process (with `env` added to its environment) and wait until it answers ping. */
  async start(name: string, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
    const { child, output } = this.spawnEntry('dist/src/queue/queue-main.js', [name], { RQ_LOG_LEVEL: 'debug', ...env });
    this.procs.set(name, child);
    this.outputs.set(name, output);
    onTestFailed(() => {
      console.error(`--- log of queue ${name} (root kept at ${this.root}) ---\n${output()}`);
    });
    await waitFor(async () => (await this.rpc(name, 'ping')) !== null, 10_000, `queue ${name} to answer ping`);
    return child;
  }

  /** What the queue process `start` started last for `name` has logged so far (its stdout and stderr). */
  logOf(name: string): string {
    return this.outputs.get(name)?.() ?? '';
  }

  /**
   * Start one of rq's built entry files (`dist/src/queue/queue-main.js`, say) on this root,
   * from the root, with `env` added to its environment; `output` is its stdout and stderr so far.
   */
  spawnEntry(entry: string, args: string[], env: NodeJS.ProcessEnv = {}): { child: ChildProcess; output: () => string } {
    const child = spawn(process.execPath, [path.join(REPO, entry), ...args], {
      cwd: this.root,
      env: { ...process.env, RQ_ROOT: this.root, RQ_FATAL_DELAY_MS: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    return { child, output: () => out };
  }

  /** kill -9 the queue process and wait for it to be gone. */
  kill9(name: string): Promise<void> {
    return this.signalQueue(name, 'SIGKILL');
  }

  /** Stop the queue process as rq-mgr does (SIGTERM) and wait for it to exit. */
  stop(name: string): Promise<void> {
    return this.signalQueue(name, 'SIGTERM');
  }

  private async signalQueue(name: string, signal: NodeJS.Signals): Promise<void> {
    const child = this.procs.get(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await gone;
  }

  /** kill -9 a queue process that rq-mgr supervises, and wait until rq-mgr has started a new one that answers. */
  async killQueueUnderMgr(queue: string, timeoutMs = 10_000): Promise<void> {
    const pidFile = `queues/${queue}/queue.pid`;
    const pid = this.pidIn(pidFile);
    if (pid === undefined || !pidAlive(pid)) throw new Error(`queue ${queue} has no live process`);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !pidAlive(pid), timeoutMs, `queue ${queue}'s process to die`);
    await waitFor(
      async () => {
        const now = this.pidIn(pidFile);
        return now !== undefined && now !== pid && pidAlive(now) && (await this.rpc(queue, 'ping', '')) !== null;
      },
      timeoutMs,
      `rq-mgr to restart queue ${queue}`,
    );
  }

  /** Call a command; the argument is sent as JSON (`''` sends no argument). */
  rpc(queue: string, command: string, arg: unknown = {}): Promise<unknown> {
    return this.rpcRaw(queue, command, arg === '' ? '' : JSON.stringify(arg));
  }

  /** Call a command with the argument text exactly as given. */
  rpcRaw(queue: string, command: string, argument: string): Promise<unknown> {
    return rpcCall(path.join(this.queueDir(queue), 'queue.sock'), command, argument);
  }

  /** Call an rq-mgr command on config/queuemgr.sock; the argument is sent as it is. */
  mgr(command: string, argument = ''): Promise<unknown> {
    return rpcCall(path.join(this.root, 'config/queuemgr.sock'), command, argument);
  }

  /** create_message; returns the short id (throws on a fail reply). */
  async send(queue: string, msg: Record<string, unknown>): Promise<string> {
    const reply = (await this.rpc(queue, 'create_message', { dest: queue, ...msg })) as [string, string];
    if (!isOk(reply)) throw new Error(`create_message failed: ${JSON.stringify(reply)}`);
    return shortId(reply[1]);
  }

  async state(queue: string, id: string): Promise<string | undefined> {
    const r = (await this.rpc(queue, 'get_message_state', { msg_id: id })) as [string, string];
    return r?.[0] === 'ok' ? r[1] : undefined;
  }

  async statusOf(queue: string, id: string): Promise<string | undefined> {
    const r = (await this.rpc(queue, 'get_message_status', { msg_id: id })) as [string, { status: string }];
    return r?.[0] === 'ok' ? r[1].status : undefined;
  }

  async message(queue: string, id: string): Promise<Record<string, unknown>> {
    const r = (await this.rpc(queue, 'get_message', { msg_id: id })) as [string, Record<string, unknown>];
    if (r?.[0] !== 'ok') throw new Error(`get_message failed: ${JSON.stringify(r)}`);
    return r[1];
  }

  /** Wait until a message reaches a state; returns its status text. */
  async waitState(queue: string, id: string, state: string, timeoutMs = 10_000): Promise<string> {
    await waitFor(async () => (await this.state(queue, id)) === state, timeoutMs, `${id} to reach ${state}`);
    return (await this.statusOf(queue, id))!;
  }

  async cleanup(passed: boolean): Promise<void> {
    const mgr = this.pidIn('config/queuemgr.pid');
    if (mgr !== undefined && pidAlive(mgr)) await this.bin('rq-mgr', ['stop']);
    for (const child of this.procs.values()) {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await gone;
      }
    }
    this.killWorkers();
    if (passed) fs.rmSync(this.root, { recursive: true, force: true });
  }

  /**
   * Workers outlive their queue process (as in RQ), so a test that ends with a script
   * still running would leave it behind: kill the process group of every `run/<id>/pid`.
   */
  private killWorkers(): void {
    for (const queue of fs.readdirSync(path.join(this.root, 'queues'))) {
      let runs: string[];
      try {
        runs = fs.readdirSync(path.join(this.queueDir(queue), 'run'));
      } catch {
        continue;
      }
      for (const id of runs) {
        const pid = this.pidIn(`queues/${queue}/run/${id}/pid`);
        if (pid === undefined) continue;
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }
}

/**
 * One request sent as `printf 'rq1 …' | socat - UNIX-CONNECT:<socket>` sends it: written,
 * then the sending side shut down at once; the reply read until the server closes. Throws
 * unless exactly one whole packet came.
 */
export function halfClosedCall(socketPath: string, command: string, argument: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(socketPath);
    const got: Buffer[] = [];
    s.on('connect', () => s.end(encodePacket(command, ' ', argument)));
    s.on('data', (c: Buffer) => got.push(c));
    s.on('error', reject);
    s.on('close', () => {
      const bytes = Buffer.concat(got);
      const header = /^rq1 (\d{8}) $/.exec(bytes.subarray(0, 13).toString('latin1'));
      if (!header || bytes.length !== 13 + Number(header[1])) reject(new Error(`not one whole reply packet: ${JSON.stringify(bytes.toString())}`));
      else resolve(JSON.parse(bytes.subarray(13).toString('utf8')));
    });
  });
}

export function shortId(full: string): string {
  return full.slice(full.lastIndexOf('/') + 1);
}

/** Poll a condition until it holds (no fixed sleeps in tests). */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A queue process's environment in which its spawner holds each spawn for 1.5 s after the
 * fork (test/fixtures/slow-spawner.cjs), so a test can act on a run that is still starting.
 */
export const SLOW_SPAWNER_ENV: NodeJS.ProcessEnv = {
  NODE_OPTIONS: `--require ${path.join(REPO, 'test/fixtures/slow-spawner.cjs')}`,
};

/**
 * A queue process's environment in which, while the file `hold-commit` exists in the
 * install root, every sync of the journal waits for it to be removed
 * (test/fixtures/hold-commit.cjs): a change is in the journal, not yet synced, carried
 * out or in memory until then.
 */
export const HOLD_COMMIT_ENV: NodeJS.ProcessEnv = {
  NODE_OPTIONS: `--require ${path.join(REPO, 'test/fixtures/hold-commit.cjs')}`,
};

/** Whether the queue's journal holds a record putting message `id` in `state` (a change under way, or made). */
export function recorded(t: TestRoot, queue: string, id: string, state: string): boolean {
  return fs.readFileSync(path.join(t.queueDir(queue), 'que.index'), 'utf8').includes(`{"id":"${id}","to":"${state}"`);
}

/** A process's children (a queue process's are its spawners; a spawner's, its workers). */
export function childrenOf(pid: number): number[] {
  return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

/** A process's parent, from /proc/<pid>/stat. */
export function parentPid(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** The kinds of rq process (its children, scripts, are not among them). */
export type RqKind = 'rq-mgr' | 'queue' | 'host' | 'web' | 'spawner';

export interface RqProcess {
  pid: number;
  ppid: number;
  kind: RqKind;
  /** The queue of a queue process or spawner. */
  queue?: string;
}

/** What /proc/<pid>/cmdline shows of each kind: the entry file while it starts, then its title. */
const RQ_COMMANDS: Array<[RqKind, RegExp]> = [
  ['rq-mgr', /^\[rq-mgr\]|\/rq-mgr-main\.js\b|\/bin\/rq-mgr run\b/],
  ['queue', /^\[rq-que\] \[(.*)\]|\/queue-main\.js (\S+)/],
  ['host', /^\[rq-host\]|\/host-main\.js\b/],
  ['web', /^\[rq-web\]|\/web-main\.js\b/],
  ['spawner', /^\[rq-spawn\] \[(.*)\]|\/spawner-main\.js (\S+)/],
];

/** Every live rq process (rq-mgr, queue, web process, spawner) whose cwd is `root`, read from /proc. */
export function rootProcesses(root: string): RqProcess[] {
  const out: RqProcess[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    try {
      if (fs.readlinkSync(`/proc/${pid}/cwd`) !== root || !pidAlive(pid)) continue;
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0+$/, '').replaceAll('\0', ' ');
      for (const [kind, re] of RQ_COMMANDS) {
        const m = re.exec(cmdline);
        if (!m) continue;
        const queue = m[1] ?? m[2];
        out.push({ pid, ppid: parentPid(pid), kind, ...(queue === undefined ? {} : { queue }) });
        break;
      }
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** Whether a process is alive; an unreaped zombie is not. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/**
 * A fresh TestRoot for every test of the calling file: removed after a pass, kept (with
 * its path and queue logs printed) after a failure.
 */
export function useTestRoot(): () => TestRoot {
  let current: TestRoot | undefined;
  beforeEach(() => {
    const t = new TestRoot();
    current = t;
    // onTestFinished runs after the afterEach hooks, once the result is known.
    onTestFinished(async (ctx) => t.cleanup(ctx.task.result?.state === 'pass'));
  });
  return () => {
    if (!current) throw new Error('useTestRoot: no test is running');
    return current;
  };
}

/** Ports this test process has handed out: the kernel may give a closed one again. */
const handedOut = new Set<number>();

/**
 * A port that was free on 127.0.0.1 a moment ago, and not one handed out before in this
 * process (the web's and a front door's port, asked for one after the other, were once the
 * same, and the door could never listen).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.once('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const { port: p } = srv.address() as net.AddressInfo;
        srv.close(() => resolve(p));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

/**
 * One TestRoot for the tests of the calling describe (or file): `start` runs once before
 * them (rq-mgr, the web, what they share) and `stop` after them; the root is removed
 * when they all passed and kept, its path printed, when one failed or the start did.
 * `started()` is what `start` returned.
 */
export function sharedRoot<T>(start: (t: TestRoot) => Promise<T>, stop?: () => Promise<void>): { t: () => TestRoot; started: () => T } {
  let t: TestRoot | undefined;
  let started: T | undefined;
  let failed = false;
  beforeAll(async () => {
    try {
      const root = new TestRoot();
      t = root;
      started = await start(root);
    } catch (e) {
      failed = true;
      throw e;
    }
  });
  beforeEach((ctx) => {
    ctx.onTestFailed(() => {
      failed = true;
    });
  });
  afterAll(async () => {
    await stop?.();
    if (failed) console.error(`install root kept at ${t?.root}`);
    await t?.cleanup(!failed);
  });
  return {
    t: () => t!,
    started: () => started!,
  };
}
