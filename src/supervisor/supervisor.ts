/**
 * rq-mgr, the supervisor (spec/rq.md §4.2, §5.3): one queue process per queue directory
 * and one web process, each restarted with backoff when it dies, and the RPC on
 * `config/queuemgr.sock` that creates, deletes, pauses, resumes, downs, ups and restarts
 * queues, and (beyond RQ, for the web) reports how often it restarted each of them.
 *
 * Children get an IPC channel, rq-mgr's pid in RQ_PARENT_PID, and their own process
 * group: they exit when rq-mgr is gone, even by kill -9 and even while they are still
 * starting (parent-link.ts), and a Ctrl-C at rq-mgr's terminal reaches only rq-mgr,
 * which then stops them in order. Each child holds its own lock (process-lock.ts), so a
 * child of an rq-mgr that died, while it exits, keeps the next rq-mgr's child from
 * starting in its place until it is gone. Their stdout and stderr come back to rq-mgr
 * line by line and go to the one log destination, so a logrotate reopen (SIGUSR1) is
 * handled in one place. Workers (the queues' scripts) are never signalled here.
 *
 * The supervisor never touches messages; it writes only queue directories, queue
 * configs and the admin flag files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { RqError, asNoSpace, coerceError } from '../domain/errors.js';
import { isTooDeep } from '../domain/json-depth.js';
import { isPlainObject } from '../domain/message.js';
import { isNewRqQueueName, isProtocolQueueName, isValidQueueName } from '../domain/names.js';
import { normaliseQueueConfig, serialiseQueueConfig } from '../domain/queue-config.js';
import { rubyToI } from '../domain/ruby.js';
import { QueueClient } from '../client/queue-client.js';
import { createRpcServer, listenOwnerOnly } from '../rpc/server.js';
import type { Logger } from '../lib/logger.js';
import { QUEUE_MAIN, QUEUE_NODE_FLAGS, WEB_MAIN } from '../lib/install-root.js';
import { PARENT_PID_VAR } from '../lib/parent-link.js';
import { writeFileDurably } from '../store/atomic.js';
import { ensureQueueDirs, fittedFileName, queueLayout, type QueueLayout, type RootLayout } from '../store/layout.js';
import { RQ_VERSION } from '../domain/version.js';
import { readLinkedConfig } from '../store/config-files.js';
import { isRunnable, resolveScript } from '../spawn/runner.js';

/**
 * RQ restarts a queue after up to this many unexpected deaths and gives up at the next one
 * (spec/rq.md §4.2: counter > 10); the counter never decays.
 */
const MAX_RESTARTS = 10;
/**
 * Backoff before restart number n: base × 2^(n-1), at most 50 × base (5 s for the
 * default base of 100 ms; `RQ_RESTART_BACKOFF_MS` sets the base, and the tests make it small).
 */
function restartDelayMs(n: number, baseMs = Number(process.env['RQ_RESTART_BACKOFF_MS'] ?? 100)): number {
  return Math.min(baseMs * 2 ** Math.max(n - 1, 0), 50 * baseMs);
}

/** How long a new queue process may take to answer ping before its start is taken as done. */
const QUEUE_START_WAIT_MS = 5_000;

type Mark = 'RUNNING' | 'SHUTDOWN' | 'DELETE' | 'ERROR';

interface QueueProc {
  name: string;
  mark: Mark;
  child: ChildProcess | undefined;
  /** Unexpected deaths since the last start by hand (backoff and the give-up limit). */
  restarts: number;
  /** Processes started after an unexpected death, since rq-mgr started (never reset). */
  autoRestarts: number;
  /** Resolves when the current child has exited (at once when there is none). */
  exited: Promise<void>;
}

interface SupervisorOptions {
  root: RootLayout;
  log: Logger;
  /** Where children's log lines go (the same place as rq-mgr's own). */
  writeLine: (line: string) => void;
  /** Environment for every child (RQ_ENV, TMPDIR set from config.json). */
  env: NodeJS.ProcessEnv;
}

export class Supervisor {
  private readonly o: SupervisorOptions;
  private readonly queues = new Map<string, QueueProc>();
  /** `restarts`: the web process's unexpected deaths, each followed by a restart; never reset. */
  private web: { child: ChildProcess | undefined; restarts: number } = { child: undefined, restarts: 0 };
  private readonly startedAt = Date.now();
  private server = createRpcServer(async (command, argument) => JSON.stringify(await this.command(command, argument)));
  private shuttingDown: Promise<void> | undefined;
  /** Asks a queue process started here whether it answers yet. */
  private readonly queueClient: QueueClient;

  constructor(o: SupervisorOptions) {
    this.o = o;
    this.queueClient = new QueueClient(o.root);
  }

  /**
   * §4.2 start-up: pid file, one process per queue directory, the web process, then the
   * socket. The socket opens last, so `rq-mgr start` (which waits for it) returns only
   * when the queues answer and the web listens. The caller holds the root's rq-mgr lock,
   * so no other rq-mgr writes the pid file.
   */
  async start(): Promise<void> {
    const { mgrPidFile, mgrSocket } = this.o.root;
    fs.writeFileSync(mgrPidFile, `${process.pid}\n`);
    await Promise.all(this.discover().map((name) => this.startQueue(name)));
    await this.startWeb();
    fs.rmSync(mgrSocket, { force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      listenOwnerOnly(this.server, mgrSocket, resolve);
    });
    this.o.log.info({ queues: [...this.queues.keys()] }, 'rq-mgr started');
  }

  /** Queue directories worth a process: a valid name and a readable config.json. */
  private discover(): string[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.o.root.queuesDir).sort();
    } catch {
      return [];
    }
    return names.filter((n) => isValidQueueName(n) && isReadable(queueLayout(this.o.root, n).configFile));
  }

  private spawnChild(entry: string, args: string[], tag: Record<string, unknown>, nodeFlags: readonly string[] = []): ChildProcess {
    const child = spawn(process.execPath, [...nodeFlags, entry, ...args], {
      cwd: this.o.root.root,
      env: { ...this.o.env, RQ_ROOT: this.o.root.root, [PARENT_PID_VAR]: String(process.pid) },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      detached: true,
    });
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
        // pino lines pass through; anything else (a crash trace) is wrapped as JSON.
        this.o.writeLine(line.startsWith('{') ? line : JSON.stringify({ level: 50, time: Date.now(), ...tag, pid: child.pid, msg: line }));
      });
    }
    return child;
  }

  /**
   * Spawn a queue process and wait until it answers ping (§4.2), or is gone, or
   * QUEUE_START_WAIT_MS have passed (it may be recovering a long queue, or waiting for
   * the previous process of the queue to exit).
   */
  private async startQueue(name: string, proc?: QueueProc): Promise<void> {
    const p: QueueProc = proc ?? { name, mark: 'RUNNING', child: undefined, exited: Promise.resolve(), restarts: 0, autoRestarts: 0 };
    p.mark = 'RUNNING';
    this.queues.set(name, p);
    const child = this.spawnChild(QUEUE_MAIN, [name], { queue: name }, QUEUE_NODE_FLAGS);
    p.child = child;
    p.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      this.onQueueExit(p, child, code, signal);
      resolve();
    }));
    child.on('error', (e) => this.o.log.error({ queue: name, err: e.message }, 'cannot spawn queue process'));
    const until = Date.now() + QUEUE_START_WAIT_MS;
    while (Date.now() < until && p.child === child && child.exitCode === null) {
      if ((await this.queueClient.probe(name, 'ping', {}, 1000)) !== undefined) return;
      await sleep(50);
    }
  }

  private onQueueExit(p: QueueProc, child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (p.child !== child) return;
    p.child = undefined;
    this.handleGone(p, code, signal);
  }

  /** A queue process is gone: act on its mark (§4.2). */
  private handleGone(p: QueueProc, code: number | null, signal: NodeJS.Signals | null): void {
    const { log } = this.o;
    switch (p.mark) {
      case 'RUNNING': {
        p.restarts++;
        if (p.restarts > MAX_RESTARTS) {
          p.mark = 'ERROR';
          log.error({ queue: p.name }, `FAILED [ ${p.name} - too many restarts. Not restarting ]`);
          return;
        }
        const delay = restartDelayMs(p.restarts);
        log.warn({ queue: p.name, code, signal, restarts: p.restarts, delay_ms: delay }, 'queue process died; restarting');
        setTimeout(() => {
          if (p.mark !== 'RUNNING' || p.child || this.shuttingDown) return;
          p.autoRestarts++;
          void this.startQueue(p.name, p);
        }, delay);
        return;
      }
      case 'DELETE': {
        const { dir } = queueLayout(this.o.root, p.name);
        try {
          const ino = fs.statSync(dir).ino;
          // names.ts refuses this suffix, so the directory is never taken for a live queue.
          const to = fittedFileName(p.name, `.deleted.${ino}`);
          fs.renameSync(dir, path.join(path.dirname(dir), to));
          log.info({ queue: p.name, to }, 'queue deleted');
        } catch (e) {
          log.error({ queue: p.name, err: coerceError(e).message }, 'cannot rename deleted queue');
        }
        this.queues.delete(p.name);
        break;
      }
      case 'SHUTDOWN':
        this.queues.delete(p.name);
        break;
    }
  }

  /** Spawn the web process; resolves when it says it listens (or is gone, or after 5 s). */
  private startWeb(): Promise<void> {
    if (this.shuttingDown) return Promise.resolve();
    const child = this.spawnChild(WEB_MAIN, [], { component: 'web' });
    this.web.child = child;
    const ready = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 5_000);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      child.once('message', done);
      child.once('exit', done);
    });
    child.once('exit', (code, signal) => {
      if (this.web.child !== child) return;
      this.web.child = undefined;
      if (this.shuttingDown) return;
      this.web.restarts++;
      const delay = restartDelayMs(this.web.restarts);
      this.o.log.error({ component: 'web', code, signal, delay_ms: delay }, 'web process died; restarting');
      setTimeout(() => void this.startWeb(), delay);
    });
    return ready;
  }

  /** TERM every queue, wait for them, then the web process; remove pid file and socket. */
  shutdown(): Promise<void> {
    this.shuttingDown ??= (async () => {
      this.o.log.info('rq-mgr shutting down');
      const waits: Array<Promise<void>> = [];
      for (const p of this.queues.values()) {
        if (!p.child) continue;
        p.mark = 'SHUTDOWN';
        p.child.kill('SIGTERM');
        waits.push(p.exited);
      }
      await Promise.all(waits);
      const web = this.web.child;
      if (web && web.exitCode === null) {
        const gone = new Promise((r) => web.once('exit', r));
        web.kill('SIGTERM');
        await gone;
      }
      await new Promise<void>((resolve) => this.server.close(() => resolve()));
      fs.rmSync(this.o.root.mgrSocket, { force: true });
      fs.rmSync(this.o.root.mgrPidFile, { force: true });
      this.o.log.info('rq-mgr stopped');
    })();
    return this.shuttingDown;
  }

  /** SIGHUP (§4.2): reload configs of live queues, stop vanished ones, start new ones. */
  reload(): void {
    for (const p of this.queues.values()) {
      if (!p.child) continue;
      if (isReadable(queueLayout(this.o.root, p.name).configFile)) p.child.kill('SIGHUP');
      else {
        p.mark = 'SHUTDOWN';
        p.child.kill('SIGTERM');
      }
    }
    for (const name of this.discover()) if (!this.queues.has(name)) void this.startQueue(name);
  }

  // ───────────────────────────── RPC (§5.3) ─────────────────────────────

  private async command(command: string, argument: string): Promise<unknown> {
    try {
      switch (command) {
        case 'ping':
          return ['pong'];
        case 'environment':
          return [this.o.env['RQ_ENV'] ?? null];
        case 'version':
          return [RQ_VERSION];
        case 'uptime':
          return [Math.floor((Date.now() - this.startedAt) / 1000)];
        case 'queues':
          return [...this.queues.keys()];
        case 'restarts':
          return this.restartCounts();
        case 'pause_queue':
        case 'resume_queue':
        case 'down_queue':
        case 'up_queue':
          return this.adminFlag(command, argument);
        case 'restart_queue':
          return await this.restartQueue(argument);
        case 'create_queue':
          return await this.createQueue(argument);
        case 'create_queue_link':
          return await this.createQueueLink(argument);
        case 'create_pull_queue':
          return await this.createPullQueue(argument);
        case 'delete_queue':
          return this.deleteQueue(argument);
        default:
          return ['error'];
      }
    } catch (e) {
      this.o.log.error({ command, err: coerceError(e).stack }, 'rq-mgr command failed');
      return ['fail', coerceError(e).message];
    }
  }

  /**
   * `restarts` (beyond RQ): `{"queues": {<name>: n}, "web": n}`, how many times rq-mgr
   * restarted each process after an unexpected death since rq-mgr started. A
   * `restart_queue` by hand is not counted (and does not reset the count).
   */
  private restartCounts(): { queues: Record<string, number>; web: number } {
    const queues: Record<string, number> = {};
    for (const p of this.queues.values()) queues[p.name] = p.autoRestarts;
    return { queues, web: this.web.restarts };
  }

  private adminFlag(command: string, name: string): unknown {
    // this.queues holds valid names only, so no name from the socket reaches a path unchecked.
    if (!this.queues.has(name)) return ['fail', 'invalid queue name', 'RQ_QUEUE_NOT_FOUND'];
    const q = queueLayout(this.o.root, name);
    try {
      if (command === 'down_queue') fs.writeFileSync(q.downFlag, '');
      else if (command === 'up_queue') fs.rmSync(q.downFlag, { force: true });
      else if (command === 'pause_queue') fs.writeFileSync(q.pauseFlag, '');
      else fs.rmSync(q.pauseFlag, { force: true });
    } catch {
      return ['fail', 'not allowed to up'];
    }
    return ['ok', name];
  }

  private async restartQueue(name: string): Promise<unknown> {
    const p = this.queues.get(name);
    if (!p) return ['fail', 'no such queue', 'RQ_QUEUE_NOT_FOUND'];
    if (p.child) {
      const exited = p.exited;
      p.mark = 'SHUTDOWN';
      p.child.kill('SIGTERM');
      await exited;
    }
    p.restarts = 0;
    await this.startQueue(name, p);
    this.o.log.info({ queue: name }, 'queue restarted');
    return ['ok', name];
  }

  private async createQueue(argument: string): Promise<unknown> {
    let raw: unknown;
    try {
      raw = JSON.parse(argument);
    } catch {
      return ['fail', 'queue not created'];
    }
    if (!isPlainObject(raw) || isTooDeep(raw)) return ['fail', 'queue not created'];
    const name = raw['name'];
    if (typeof name === 'string' && this.isTaken(name)) return ['fail', 'already created'];
    if (!isNewRqQueueName(name)) return ['fail', 'queue name has invalid characters'];
    const config = normaliseQueueConfig(raw);
    return this.provision(name, config.script, (configFile) => writeFileDurably(configFile, serialiseQueueConfig(config)));
  }

  /**
   * create_queue_link: read the file (inside the root, a regular file of at most 1 MiB,
   * without blocking), validate it in RQ's order (§1.5), then link config.json to the
   * real path of the file it read.
   */
  private async createQueueLink(argument: string): Promise<unknown> {
    const unreadable = (why: string): unknown => ['fail', `could not read queue config [ ${argument} ]: ${why}`];
    let raw: unknown;
    let file: string;
    try {
      const linked = await readLinkedConfig(this.o.root.root, argument);
      file = linked.file;
      raw = JSON.parse(linked.text);
    } catch (e) {
      return unreadable(coerceError(e).message);
    }
    if (!isPlainObject(raw)) return unreadable('not a JSON object');
    if (isTooDeep(raw)) return unreadable('nested too deep');
    const fail = validateLinkedConfig(raw);
    if (fail) return ['fail', fail];
    const name = raw['name'] as string;
    if (this.isTaken(name)) return ['fail', 'queue is already running'];
    if (!isNewRqQueueName(name)) return ['fail', 'queue name has invalid characters'];
    return this.provision(name, raw['script'] as string, (configFile) => fs.symlinkSync(file, configFile), { config: file });
  }

  /**
   * create_pull_queue (beyond RQ): the queue a pull front door makes on first use, named
   * by the protocols' rule (names.ts), with no script, so its messages wait for external
   * workers to lease them. Answers `["ok", name]` when the queue runs, whether it was
   * made now or already there (two front doors may race to make it).
   */
  private async createPullQueue(name: string): Promise<unknown> {
    if (!isProtocolQueueName(name)) return ['fail', 'queue name has invalid characters'];
    const existing = this.queues.get(name);
    if (existing) {
      if (existing.mark === 'DELETE') return ['fail', 'queue is being deleted'];
      return ['ok', name];
    }
    const q = queueLayout(this.o.root, name);
    if (!fs.existsSync(q.configFile)) {
      try {
        ensureQueueDirs(q);
        writeFileDurably(q.configFile, serialiseQueueConfig(normaliseQueueConfig({ name, script: '', num_workers: 0 })));
      } catch (e) {
        this.o.log.error({ queue: name, err: coerceError(e).message }, 'pull queue not created');
        return this.notCreated(e, q);
      }
    }
    if (!this.queues.has(name)) await this.startQueue(name);
    this.o.log.info({ queue: name }, 'pull queue created');
    return ['ok', name];
  }

  /**
   * The common tail of queue creation: refuse a script that cannot run, make the queue's
   * directories, put its config.json in place with `writeConfig`, start its process.
   */
  private async provision(name: string, script: string, writeConfig: (configFile: string) => void, how: Record<string, string> = {}): Promise<unknown> {
    const scriptProblem = this.scriptProblem(script);
    if (scriptProblem) return ['fail', scriptProblem];
    const q = queueLayout(this.o.root, name);
    try {
      ensureQueueDirs(q);
      writeConfig(q.configFile);
    } catch (e) {
      this.o.log.error({ queue: name, err: coerceError(e).message }, 'queue not created');
      return this.notCreated(e, q);
    }
    await this.startQueue(name);
    this.o.log.info({ queue: name, ...how }, 'queue created');
    return ['success', 'queue created - awesome'];
  }

  /**
   * RQ's `["fail", "queue not created"]`, or for a full disk its own refusal with its code:
   * `["fail", "no space left on device: queues/<q>", "RQ_NO_SPACE"]`.
   */
  private notCreated(e: unknown, q: QueueLayout): unknown {
    const err = asNoSpace(e, path.relative(this.o.root.root, q.dir));
    return err instanceof RqError && err.code === 'RQ_NO_SPACE' ? ['fail', err.message, err.code] : ['fail', 'queue not created'];
  }

  /** A queue of this name runs, or its directory exists (perhaps left by hand). */
  private isTaken(name: string): boolean {
    return this.queues.has(name) || (isValidQueueName(name) && fs.existsSync(queueLayout(this.o.root, name).dir));
  }

  /**
   * Beyond RQ (which accepted it and showed SCRIPTERROR later): a queue is not created
   * for a script that does not exist or cannot be executed.
   */
  private scriptProblem(script: string): string | undefined {
    if (isRunnable(resolveScript(this.o.root.root, script))) return undefined;
    return `queue not created: script ${script} does not exist or is not executable`;
  }

  private deleteQueue(name: string): unknown {
    const p = this.queues.get(name);
    if (!p) return ['fail', 'no such queue'];
    p.mark = 'DELETE';
    if (p.child) p.child.kill('SIGTERM');
    else this.handleGone(p, null, null);
    return ['ok', 'started deleting queue'];
  }
}

/** The checks of a config given by link, in RQ's order (§1.5); undefined when valid. */
function validateLinkedConfig(raw: Record<string, unknown>): string | undefined {
  const size = (v: unknown): number => (typeof v === 'string' || Array.isArray(v) ? v.length : isPlainObject(v) ? Object.keys(v).length : 0);
  if (!('name' in raw)) return 'json config is missing name field';
  if (size(raw['name']) < 1 || size(raw['name']) > 128) return 'json config has invalid name (size)';
  if (typeof raw['name'] !== 'string') return 'json config has invalid name (not String)';
  if (!('num_workers' in raw)) return 'json config is missing num_workers field';
  const n = rubyToI(raw['num_workers']);
  if (n < 1 || n > 128) return 'json config has invalid num_workers field (out of range 1..128)';
  if (!('script' in raw)) return 'json config is missing script field';
  if (size(raw['script']) < 1 || size(raw['script']) > 1024) return 'json config has invalid script (size)';
  if (typeof raw['script'] !== 'string') return 'json config has invalid script (not String)';
  return undefined;
}

function isReadable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
