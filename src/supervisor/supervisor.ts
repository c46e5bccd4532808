/**
 * rq-mgr, the supervisor: the queues of the root's queue directories, each served by a
 * queue process of its own (a queue that runs a script of its own, RQ's model) or on a
 * host process with many others (pull queues and the built-in queues, hosts.ts), and one
 * web process, each restarted with backoff when it dies, and the RPC on
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
 * configs and the admin flag files. This file holds the children: starting, watching,
 * restarting, stopping and reloading them. The RPC's commands are mgr-commands.ts's, the
 * restart policy restarts.ts's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { coerceError, explain } from '../domain/errors.js';
import { isValidQueueName } from '../domain/names.js';
import { QueueClient } from '../client/queue-client.js';
import type { RestartCounts } from '../rpc/mgr-api.js';
import { createRpcServer, listenOwnerOnly } from '../rpc/server.js';
import type { Logger } from '../lib/logger.js';
import { HOST_MAIN, PACKAGE_ROOT, QUEUE_MAIN, QUEUE_NODE_FLAGS, SERVICE_NODE_FLAGS, WEB_MAIN } from '../lib/install-root.js';
import { PARENT_PID_VAR } from '../lib/parent-link.js';
import { parseQueueConfig } from '../domain/queue-config.js';
import { resolveScript } from '../spawn/runner.js';
import { readMainConfig } from '../store/config-files.js';
import { fittedFileName, queueLayout, type RootLayout } from '../store/layout.js';
import { MgrCommands, type SupervisedQueues } from './mgr-commands.js';
import { Hosts } from './hosts.js';
import { RootWatch } from './root-watch.js';
import { MAX_RESTARTS, restartDelayMs, type QueueProc, type Serving } from './restarts.js';

/** How long a new queue process may take to answer ping before its start is taken as done. */
const QUEUE_START_WAIT_MS = 5_000;
/** How often a starting queue process is asked whether it answers, short of its word that it does. */
const QUEUE_POLL_MS = 50;

/** rq's own scripts (the built-in queues'): their queues share a host. */
const BUILTIN_SCRIPTS = path.join(PACKAGE_ROOT, 'libexec');

interface SupervisorOptions {
  root: RootLayout;
  log: Logger;
  /** Where children's log lines go (the same place as rq-mgr's own). */
  writeLine: (line: string) => void;
  /** Environment for every child (RQ_ENV, TMPDIR set from config.json). */
  env: NodeJS.ProcessEnv;
}

export class Supervisor implements SupervisedQueues {
  private readonly o: SupervisorOptions;
  private readonly queues = new Map<string, QueueProc>();
  /** `restarts`: the web process's unexpected deaths, each followed by a restart; never reset. */
  private web: { child: ChildProcess | undefined; restarts: number } = { child: undefined, restarts: 0 };
  /** The text of config/config.json when the web process was last started: a reload that finds another restarts it. */
  private webConfig: string | undefined;
  readonly startedAt = Date.now();
  private readonly commands: MgrCommands;
  private server = createRpcServer(async (command, argument) => JSON.stringify(await this.commands.command(command, argument)));
  private shuttingDown: Promise<void> | undefined;
  /** Asks a queue process started here whether it answers yet. */
  private readonly queueClient: QueueClient;
  private readonly hosts: Hosts;
  /** How each hosted queue's serving ends, by queue (hosts.ts calls `ended` once per open). */
  private readonly hostedEnds = new Map<string, (code: number | null, signal: NodeJS.Signals | null) => void>();
  /** Restarts under way, by queue. */
  private readonly restarting = new Map<string, Promise<boolean>>();
  /** New queue directories and a changed config.json, noticed without `reload` (from start-up on). */
  private watch: RootWatch | undefined;

  constructor(o: SupervisorOptions) {
    this.o = o;
    this.queueClient = new QueueClient(o.root);
    this.commands = new MgrCommands(this, o);
    this.hosts = new Hosts({
      spawn: (id) => this.spawnChild(HOST_MAIN, [String(id)], { host: id }, QUEUE_NODE_FLAGS),
      ended: (queue, code, signal) => {
        const end = this.hostedEnds.get(queue);
        this.hostedEnds.delete(queue);
        end?.(code, signal);
      },
      perHost: Number(process.env['RQ_QUEUES_PER_HOST'] ?? 2_000),
    });
  }

  /**
   * Start-up: pid file, the web process, one process per queue directory, then the
   * socket. The web, the slowest to start and in need of no queue, starts first, and the
   * queues start while it loads. The socket opens last, so `rq-mgr start` (which waits
   * for it) returns only when the queues answer and the web listens. The caller holds
   * the root's rq-mgr lock, so no other rq-mgr writes the pid file.
   */
  async start(): Promise<void> {
    const { mgrPidFile, mgrSocket } = this.o.root;
    fs.writeFileSync(mgrPidFile, `${process.pid}\n`);
    const web = this.startWeb();
    this.watch = new RootWatch(
      this.o.root,
      {
        has: (name) => this.queues.has(name),
        newQueue: (name) => void this.startQueue(name),
        mainConfigChanged: () => this.reloadWeb(),
      },
      this.o.log,
    );
    await Promise.all([web, ...this.discover().map((name) => this.startQueue(name))]);
    fs.rmSync(mgrSocket, { force: true });
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      listenOwnerOnly(this.server, mgrSocket, resolve);
    });
    const names = [...this.queues.keys()];
    // A name each, up to a hundred; past that, how many (a root may hold thousands).
    this.o.log.info(names.length <= 100 ? { queues: names } : { queues: names.length }, 'rq-mgr started');
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
   * Spawn a queue process and wait until it answers ping, or is gone, or
   * QUEUE_START_WAIT_MS have passed (it may be recovering a long queue, or waiting for
   * the previous process of the queue to exit). Ping is asked every QUEUE_POLL_MS, and at
   * once when the process says over IPC that it serves (queue-main.ts).
   */
  async startQueue(name: string, proc?: QueueProc): Promise<void> {
    const p: QueueProc = proc ?? { name, mark: 'RUNNING', child: undefined, exited: Promise.resolve(), restarts: 0, autoRestarts: 0 };
    p.mark = 'RUNNING';
    this.queues.set(name, p);
    if (this.isHosted(name)) return this.startHosted(p);
    const child = this.spawnChild(QUEUE_MAIN, [name], { queue: name }, QUEUE_NODE_FLAGS);
    const serving: Serving = { stop: () => void child.kill('SIGTERM'), reload: () => void child.kill('SIGHUP') };
    p.child = serving;
    p.exited = new Promise((resolve) => child.once('exit', (code, signal) => {
      this.onQueueExit(p, serving, code, signal);
      resolve();
    }));
    child.on('error', (e) => this.o.log.error({ queue: name, err: e.message }, 'cannot spawn queue process'));
    // Its word ends one wait early, once: a ping that still fails after it waits as usual.
    let heard = false;
    const word = new Promise<void>((resolve) => child.once('message', () => resolve())).then(() => void (heard = true));
    const until = Date.now() + QUEUE_START_WAIT_MS;
    while (Date.now() < until && p.child === serving && child.exitCode === null) {
      if ((await this.queueClient.probe(name, 'ping', {}, 1000)) !== undefined) return;
      await (heard ? sleep(QUEUE_POLL_MS) : Promise.race([sleep(QUEUE_POLL_MS), word]));
    }
  }

  /**
   * Does this queue share a host (hosts.ts) instead of having a process of its own? Yes
   * when it runs no script (a pull queue) or one of rq's own (a built-in queue); a config
   * that cannot be read gets a process of its own, which says why it cannot start.
   */
  private isHosted(name: string): boolean {
    try {
      const { configFile } = queueLayout(this.o.root, name);
      const { script } = parseQueueConfig(fs.readFileSync(configFile, 'utf8'), configFile);
      return script === '' || path.dirname(resolveScript(this.o.root.root, script)) === BUILTIN_SCRIPTS;
    } catch {
      return false;
    }
  }

  /** Open a queue on a host; resolves once it serves, or its open has ended. */
  private async startHosted(p: QueueProc): Promise<void> {
    const serving: Serving = { stop: () => this.hosts.close(p.name), reload: () => undefined };
    p.child = serving;
    p.exited = new Promise((resolve) => {
      this.hostedEnds.set(p.name, (code, signal) => {
        this.onQueueExit(p, serving, code, signal);
        resolve();
      });
    });
    const refused = await this.hosts.open(p.name);
    if (refused !== undefined) this.o.log.error({ queue: p.name, err: refused }, 'queue not served');
  }

  private onQueueExit(p: QueueProc, child: Serving, code: number | null, signal: NodeJS.Signals | null): void {
    if (p.child !== child) return;
    p.child = undefined;
    this.handleGone(p, code, signal);
  }

  /** A queue process is gone: act on its mark. */
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
    this.webConfig = readTextOrUndefined(this.o.root.mainConfig);
    const child = this.spawnChild(WEB_MAIN, [], { component: 'web' }, SERVICE_NODE_FLAGS);
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
      await this.watch?.close();
      const waits: Array<Promise<void>> = [];
      for (const p of this.queues.values()) {
        if (!p.child) continue;
        p.mark = 'SHUTDOWN';
        // Hosted queues end with their hosts, stopped below, all at once.
        if (!this.hostedEnds.has(p.name)) p.child.stop();
        waits.push(p.exited);
      }
      await Promise.all([...waits, this.hosts.stop()]);
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

  /**
   * SIGHUP: reload configs of live queues, stop vanished ones, start new ones. A queue
   * whose config gained or lost a script of its own is restarted in its new place (a
   * process of its own, or a host).
   */
  reload(): void {
    this.hosts.reload();
    for (const p of this.queues.values()) {
      if (!p.child) continue;
      if (isReadable(queueLayout(this.o.root, p.name).configFile)) {
        if (this.isHosted(p.name) !== this.hostedEnds.has(p.name)) void this.restartQueue(p.name);
        else p.child.reload();
      } else {
        p.mark = 'SHUTDOWN';
        p.child.stop();
      }
    }
    for (const name of this.discover()) if (!this.queues.has(name)) void this.startQueue(name);
    this.reloadWeb();
  }

  /**
   * A config.json changed since the web process started (a front door added, a port, the
   * allowed hosts): start a new web process, which opens the ports once the old one, told
   * to stop, has let go of them (its lock). A config the web could not start with is
   * refused here, in the log, and the running web process serves on.
   */
  private reloadWeb(): void {
    const text = readTextOrUndefined(this.o.root.mainConfig);
    const old = this.web.child;
    if (text === this.webConfig || old === undefined) return;
    try {
      readMainConfig(this.o.root);
    } catch (e) {
      this.o.log.error({ err: explain(e) }, 'config.json changed, but the web process cannot start with it; the running one serves on');
      return;
    }
    this.o.log.info('config.json changed: starting a new web process');
    // No longer this.web.child: its exit is not a death to restart after.
    this.web.child = undefined;
    old.kill('SIGTERM');
    void this.startWeb();
  }

  // ───────────────────── for the RPC's commands (mgr-commands.ts) ─────────────────────

  names(): string[] {
    return [...this.queues.keys()];
  }

  get(name: string): QueueProc | undefined {
    return this.queues.get(name);
  }

  /**
   * `restarts` (beyond RQ): `{"queues": {<name>: n}, "web": n}`, how many times rq-mgr
   * restarted each process after an unexpected death since rq-mgr started. A
   * `restart_queue` by hand is not counted (and does not reset the count).
   */
  restartCounts(): RestartCounts {
    const queues: Record<string, number> = {};
    for (const p of this.queues.values()) queues[p.name] = p.autoRestarts;
    return { queues, web: this.web.restarts };
  }

  /**
   * Stop a queue and serve it again (on a host or by a process of its own, as its config
   * now says). A restart asked for while one is under way is answered with that one.
   */
  restartQueue(name: string): Promise<boolean> {
    const under = this.restarting.get(name);
    if (under) return under;
    const restart = this.restartNow(name).finally(() => this.restarting.delete(name));
    this.restarting.set(name, restart);
    return restart;
  }

  private async restartNow(name: string): Promise<boolean> {
    const p = this.queues.get(name);
    if (!p) return false;
    if (p.child) {
      const exited = p.exited;
      p.mark = 'SHUTDOWN';
      p.child.stop();
      await exited;
    }
    p.restarts = 0;
    await this.startQueue(name, p);
    this.o.log.info({ queue: name }, 'queue restarted');
    return true;
  }

  deleteQueue(name: string): boolean {
    const p = this.queues.get(name);
    if (!p) return false;
    p.mark = 'DELETE';
    if (p.child) p.child.stop();
    else this.handleGone(p, null, null);
    return true;
  }
}

function isReadable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** The text of `file`, or undefined when it cannot be read. */
function readTextOrUndefined(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
