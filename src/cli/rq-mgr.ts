/**
 * `bin/rq-mgr start|stop|status|restart|run|reload|zap` (docs/operations.md), with RQ's
 * output lines and exit codes. `start` daemonises (logs in `log/rq.log`) and returns
 * once rq-mgr answers on its socket; `run` becomes rq-mgr in this process, in the
 * foreground with the log on stdout (what `npm start` and the systemd unit use).
 * Whether rq-mgr runs, and its pid, is asked of the root's rq-mgr lock (process-lock.ts),
 * which the running rq-mgr holds. When no process holds the lock, or this user cannot
 * read the lock's key, the pid file answers (checked against the process's command
 * line): an rq-mgr of an older rq, which takes no lock, is still seen, stopped, and not
 * started twice. A pid file left by an rq-mgr that died is stale: rq-mgr overwrites it
 * when it starts, and `stop` and `zap` remove it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { MgrClient } from '../client/mgr-client.js';
import { explain } from '../domain/errors.js';
import { MGR_MAIN, SERVICE_NODE_FLAGS, installRoot } from '../lib/install-root.js';
import { holderName, lockHolder, type LockHolder } from '../lib/process-lock.js';
import { rootLayout, type RootLayout } from '../store/layout.js';
import { runningPid } from '../supervisor/pid-file.js';
import { loadSupervisorSettings } from '../supervisor/settings.js';

const STOP_WAIT_MS = 20_000;
const START_WAIT_MS = 15_000;
/** How often `start` asks whether the new rq-mgr answers yet. */
const START_POLL_MS = 10;

const USAGE = 'Usage: rq-mgr <start|stop|status|restart|run|reload|zap>';


function removeStale(root: RootLayout): void {
  fs.rmSync(root.mgrPidFile, { force: true });
}

/** The running rq-mgr: the holder of the root's lock, else the one its pid file names; undefined when none runs. */
async function running(root: RootLayout): Promise<LockHolder | undefined> {
  const holder = await lockHolder(root, 'rq-mgr').catch(() => undefined);
  if (holder) return holder;
  const pid = runningPid(root);
  return pid === undefined ? undefined : { pid, exiting: false };
}

/**
 * The pid of the running rq-mgr, or undefined when none runs: the lock holder's answer,
 * or, if it does not answer (its event loop is stuck), the pid in its pid file.
 */
async function mgrPid(root: RootLayout): Promise<number | undefined> {
  const holder = await running(root);
  return holder && (holder.pid ?? runningPid(root));
}

/**
 * Why rq-mgr cannot start now, once said on the terminal: another instance runs (RQ's
 * line, then its pid on stderr), or the config is bad (RQ's line and its cause on
 * stderr). Undefined when it can start.
 */
async function startProblem(root: RootLayout): Promise<'running' | 'config' | undefined> {
  const holder = await running(root);
  if (holder) {
    process.stdout.write('ERROR: there is already one or more instance(s) of the program running\n');
    process.stderr.write(`queuemgr: running [${holderName(holder)}]\n`);
    return 'running';
  }
  try {
    loadSupervisorSettings(root);
    return undefined;
  } catch (e) {
    process.stderr.write(`${explain(e)}\n`);
    return 'config';
  }
}

async function start(root: RootLayout): Promise<number> {
  const problem = await startProblem(root);
  if (problem) return problem === 'running' ? 0 : 1;
  fs.mkdirSync(path.dirname(root.logFile), { recursive: true });
  const out = fs.openSync(root.logFile, 'a');
  const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, MGR_MAIN], {
    cwd: root.root,
    env: { ...process.env, RQ_ROOT: root.root },
    stdio: ['ignore', out, out],
    detached: true,
  });
  child.unref();
  fs.closeSync(out);
  const until = Date.now() + START_WAIT_MS;
  while (Date.now() < until) {
    if (child.exitCode !== null) break;
    if ((await new MgrClient(root).probe('ping', '', 1000)) !== undefined && (await mgrPid(root)) === child.pid) {
      process.stdout.write(`queuemgr: process with pid ${child.pid} started.\n`);
      return 0;
    }
    await sleep(START_POLL_MS);
  }
  process.stderr.write(`queuemgr: failed to start; see ${root.logFile}\n`);
  return 1;
}

async function stop(root: RootLayout): Promise<number> {
  const pid = await mgrPid(root);
  if (pid === undefined) {
    removeStale(root);
    return 0;
  }
  process.stdout.write(`queuemgr: trying to stop process with pid ${pid}...\n`);
  process.kill(pid, 'SIGTERM');
  const until = Date.now() + STOP_WAIT_MS;
  while ((await mgrPid(root)) === pid && Date.now() < until) await sleep(50);
  if ((await mgrPid(root)) === pid) {
    process.kill(pid, 'SIGKILL');
    while ((await mgrPid(root)) === pid) await sleep(50);
    removeStale(root);
  }
  process.stdout.write(`queuemgr: process with pid ${pid} successfully stopped.\n`);
  return 0;
}

async function status(root: RootLayout): Promise<number> {
  const pid = await mgrPid(root);
  if (pid === undefined) {
    process.stderr.write('queuemgr: no instances running\n');
    return 3;
  }
  process.stdout.write(`queuemgr: running [pid ${pid}]\n`);
  return 0;
}

/**
 * Run one command line (without `node` and the script); resolves to the exit status.
 * After `run` this process is rq-mgr, and lives on until a signal stops it.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const root = rootLayout(installRoot());
  const command = argv[0];
  switch (command) {
    case 'start':
      return start(root);
    case 'stop':
      return stop(root);
    case 'restart':
      await stop(root);
      await sleep(1000);
      return start(root);
    case 'status':
      return status(root);
    case 'run': {
      if (await startProblem(root)) return 1;
      // Loaded only here, so that start, stop and status do not pay for the supervisor's modules.
      const { runSupervisor } = await import('../supervisor/run-supervisor.js');
      await runSupervisor(root, { foreground: true });
      return 0;
    }
    case 'reload': {
      const pid = await mgrPid(root);
      if (pid === undefined) return status(root);
      process.kill(pid, 'SIGHUP');
      return 0;
    }
    case 'zap':
      if ((await running(root)) === undefined) removeStale(root);
      return 0;
    default:
      process.stderr.write(`${USAGE}\n`);
      return command === undefined || command === '-h' || command === '--help' ? 0 : 2;
  }
}
