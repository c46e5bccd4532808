/**
 * rq-mgr's RPC commands (their types are rpc/mgr-api.ts's): each command's checks
 * and reply, for the socket `config/queuemgr.sock`. Creating a queue (from a form, a
 * linked config file, or a pull front door's first use) is done here: its name and
 * config checked in RQ's order, its directories and config.json written; the supervisor
 * then starts its process. Pausing, resuming, downing and upping a queue write or remove
 * its admin flag files. What concerns the processes themselves (restarting, deleting,
 * the restart counts) the supervisor does (supervisor.ts), through SupervisedQueues.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError, asNoSpace, coerceError } from '../domain/errors.js';
import { isTooDeep } from '../domain/json-depth.js';
import { PROTOCOL_NAMES } from '../domain/main-config.js';
import { isPlainObject } from '../domain/message.js';
import { isNewRqQueueName, isProtocolQueueName, isValidQueueName } from '../domain/names.js';
import { normaliseQueueConfig, serialiseQueueConfig } from '../domain/queue-config.js';
import { rubyToI } from '../domain/ruby.js';
import { RQ_VERSION } from '../domain/version.js';
import type { Logger } from '../lib/logger.js';
import type { RestartCounts } from '../rpc/mgr-api.js';
import { isRunnable, resolveScript } from '../spawn/runner.js';
import { writeFileDurably } from '../store/atomic.js';
import { readLinkedConfig } from '../store/config-files.js';
import { ensureQueueDirs, queueLayout, type QueueLayout, type RootLayout } from '../store/layout.js';
import type { Mark } from './restarts.js';

/** What the commands need of the supervisor: its queue processes, and the ways to start, restart and delete one. */
export interface SupervisedQueues {
  /** When rq-mgr started (epoch ms). */
  readonly startedAt: number;
  /** The names of the queues rq-mgr keeps (each has a process, or is being deleted), in the order it took them on. */
  names(): string[];
  /** The mark of a queue rq-mgr keeps, or undefined when it keeps none of that name. */
  get(name: string): { mark: Mark } | undefined;
  restartCounts(): RestartCounts;
  /** Start a process for a queue whose directory and config are in place; resolves when it answers (or after a while). */
  startQueue(name: string): Promise<void>;
  /** Stop and start a queue's process, its restart count reset; false when rq-mgr keeps no queue of that name. */
  restartQueue(name: string): Promise<boolean>;
  /** Stop a queue's process and then move its directory aside; false when rq-mgr keeps no queue of that name. */
  deleteQueue(name: string): boolean;
}

interface CommandOptions {
  root: RootLayout;
  log: Logger;
  /** The children's environment; `RQ_ENV` is the `environment` command's reply. */
  env: NodeJS.ProcessEnv;
}

export class MgrCommands {
  private readonly queues: SupervisedQueues;
  private readonly o: CommandOptions;

  constructor(queues: SupervisedQueues, o: CommandOptions) {
    this.queues = queues;
    this.o = o;
  }

  /** The reply to a command; one that throws is `["fail", <its text>]`, logged. */
  async command(command: string, argument: string): Promise<unknown> {
    try {
      switch (command) {
        case 'ping':
          return ['pong'];
        case 'environment':
          return [this.o.env['RQ_ENV'] ?? null];
        case 'version':
          return [RQ_VERSION];
        case 'uptime':
          return [Math.floor((Date.now() - this.queues.startedAt) / 1000)];
        case 'queues':
          return this.queues.names();
        case 'restarts':
          return this.queues.restartCounts();
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

  private adminFlag(command: string, name: string): unknown {
    // The supervisor holds valid names only, so no name from the socket reaches a path unchecked.
    if (this.queues.get(name) === undefined) return ['fail', 'invalid queue name', 'RQ_QUEUE_NOT_FOUND'];
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
    if (!(await this.queues.restartQueue(name))) return ['fail', 'no such queue', 'RQ_QUEUE_NOT_FOUND'];
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
   * without blocking), validate it in RQ's order, then link config.json to the
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
   * workers to lease them. The argument is `<name>` or `<name> <door>` (a name has no
   * space); the door (lmstfy, cloudq, rqms, workq) is written in the new queue's
   * config.json for the dashboard. Answers `["ok", name]` when the queue runs, whether it
   * was made now or already there (two front doors may race to make it).
   */
  private async createPullQueue(argument: string): Promise<unknown> {
    const [name = '', given, ...rest] = argument.split(' ');
    const door = PROTOCOL_NAMES.find((d) => d === given) ?? null;
    if (rest.length > 0 || (given !== undefined && door === null)) return ['fail', `expected <name> or <name> <door> (${PROTOCOL_NAMES.join(', ')})`];
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
        writeFileDurably(q.configFile, serialiseQueueConfig(normaliseQueueConfig({ name, script: '', num_workers: 0, door })));
      } catch (e) {
        this.o.log.error({ queue: name, err: coerceError(e).message }, 'pull queue not created');
        return this.notCreated(e, q);
      }
    }
    if (this.queues.get(name) === undefined) await this.queues.startQueue(name);
    this.o.log.info({ queue: name, door }, 'pull queue created');
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
    await this.queues.startQueue(name);
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
    return this.queues.get(name) !== undefined || (isValidQueueName(name) && fs.existsSync(queueLayout(this.o.root, name).dir));
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
    if (!this.queues.deleteQueue(name)) return ['fail', 'no such queue'];
    return ['ok', 'started deleting queue'];
  }
}

/** The checks of a config given by link, in RQ's order; undefined when valid. */
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
