/**
 * `bin/rq-mgr start|stop|status|restart|run|reload|zap` (spec/rq.md §6.3), with RQ's
 * output lines and exit codes. `start` daemonises (logs in `log/rq.log`) and returns
 * once rq-mgr answers on its socket; `run` stays in the foreground with the log on
 * stdout (what `npm start` and the systemd unit use). A pid file whose process is gone
 * or is not rq-mgr (a reused pid) is stale and is replaced.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { rpcCall } from '../client/rpc.js';
import { explain } from '../domain/errors.js';
import { PACKAGE_ROOT, installRoot } from '../lib/install-root.js';
import { rootLayout, type RootLayout } from '../store/layout.js';
import { runningPid } from '../supervisor/pid-file.js';
import { loadSupervisorSettings } from '../supervisor/settings.js';

const MAIN = path.join(PACKAGE_ROOT, 'dist/src/supervisor/rq-mgr-main.js');
const STOP_WAIT_MS = 20_000;
const START_WAIT_MS = 15_000;

const USAGE = 'Usage: rq-mgr <start|stop|status|restart|run|reload|zap>';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function removeStale(root: RootLayout): void {
  fs.rmSync(path.join(root.configDir, 'queuemgr.pid'), { force: true });
}

function checkSettings(root: RootLayout): boolean {
  try {
    loadSupervisorSettings(root);
    return true;
  } catch (e) {
    process.stderr.write(`${explain(e)}\n`);
    return false;
  }
}

async function start(root: RootLayout): Promise<number> {
  if (runningPid(root) !== undefined) {
    process.stdout.write('ERROR: there is already one or more instance(s) of the program running\n');
    return 0;
  }
  if (!checkSettings(root)) return 1;
  removeStale(root);
  fs.mkdirSync(path.join(root.root, 'log'), { recursive: true });
  const out = fs.openSync(path.join(root.root, 'log', 'rq.log'), 'a');
  const child = spawn(process.execPath, [MAIN], {
    cwd: root.root,
    env: { ...process.env, RQ_ROOT: root.root },
    stdio: ['ignore', out, out],
    detached: true,
  });
  child.unref();
  fs.closeSync(out);
  const sock = path.join(root.configDir, 'queuemgr.sock');
  const until = Date.now() + START_WAIT_MS;
  while (Date.now() < until) {
    if (child.exitCode !== null) break;
    if ((await rpcCall(sock, 'ping', '', 1000)) !== null && runningPid(root) === child.pid) {
      process.stdout.write(`queuemgr: process with pid ${child.pid} started.\n`);
      return 0;
    }
    await sleep(50);
  }
  process.stderr.write(`queuemgr: failed to start; see ${path.join(root.root, 'log', 'rq.log')}\n`);
  return 1;
}

async function stop(root: RootLayout): Promise<number> {
  const pid = runningPid(root);
  if (pid === undefined) {
    removeStale(root);
    return 0;
  }
  process.stdout.write(`queuemgr: trying to stop process with pid ${pid}...\n`);
  process.kill(pid, 'SIGTERM');
  const until = Date.now() + STOP_WAIT_MS;
  while (runningPid(root) === pid && Date.now() < until) await sleep(50);
  if (runningPid(root) === pid) {
    process.kill(pid, 'SIGKILL');
    while (runningPid(root) === pid) await sleep(50);
    removeStale(root);
  }
  process.stdout.write(`queuemgr: process with pid ${pid} successfully stopped.\n`);
  return 0;
}

function status(root: RootLayout): number {
  const pid = runningPid(root);
  if (pid === undefined) {
    process.stderr.write('queuemgr: no instances running\n');
    return 3;
  }
  process.stdout.write(`queuemgr: running [pid ${pid}]\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
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
    case 'run':
      if (runningPid(root) !== undefined) {
        process.stdout.write('ERROR: there is already one or more instance(s) of the program running\n');
        return 1;
      }
      if (!checkSettings(root)) return 1;
      removeStale(root);
      process.argv.push('--foreground');
      process.env['RQ_ROOT'] = root.root;
      await import('../supervisor/rq-mgr-main.js');
      return -1;
    case 'reload': {
      const pid = runningPid(root);
      if (pid === undefined) return status(root);
      process.kill(pid, 'SIGHUP');
      return 0;
    }
    case 'zap':
      if (runningPid(root) === undefined) removeStale(root);
      return 0;
    default:
      process.stderr.write(`${USAGE}\n`);
      return command === undefined || command === '-h' || command === '--help' ? 0 : 2;
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
