/**
 * Entry point of a queue process: `node dist/src/queue/queue-main.js <queue>`, for the
 * install root `installRoot()` (RQ_ROOT, as rq-mgr sets it, else the package root). It
 * takes the queue's lock (process-lock.ts), writes `queue.pid`, recovers the queue,
 * serves `queue.sock`, and runs the queue until TERM, a `shutdown` RPC, or the loss of
 * its supervisor (parent-link.ts), whenever that happens, even while it starts.
 * Workers are never signalled on exit (spec/rq.md §4.3): they outlive a restart, and
 * recovery waits for them.
 *
 * The lock makes this the queue's one writer: a second process for the queue waits while
 * the holder is exiting (a queue process whose rq-mgr died, finishing what it accepted),
 * and otherwise refuses to start, naming the holder's pid.
 *
 * RQ_INDEX_COMPACT_LINES (default 50,000) is how long the que index journal may grow
 * before it is compacted; tests lower it to compact while commits are in flight.
 * RQ_SPAWNER_IDLE_MS (default 300,000: 5 minutes) is how long a spawner (spawner.ts)
 * stays without runs before it exits; tests lower it.
 */
process.env['UV_THREADPOOL_SIZE'] ??= '16';

import fs from 'node:fs';
import path from 'node:path';
import { coerceError } from '../domain/errors.js';
import { isValidQueueName } from '../domain/names.js';
import { parseQueueConfig } from '../domain/queue-config.js';
import { installRoot } from '../lib/install-root.js';
import { createLogger } from '../lib/logger.js';
import { QueueClient } from '../client/queue-client.js';
import { followParent } from '../lib/parent-link.js';
import { holderName, takeLock, type ProcessLock } from '../lib/process-lock.js';
import { createRpcServer, listenOwnerOnly } from '../rpc/server.js';
import { readMainConfig } from '../store/config-files.js';
import { createGroupCommitter } from '../store/group-commit.js';
import { ensureQueueDirs, queueLayout, rootLayout } from '../store/layout.js';
import { createMessageStore } from '../store/message-store.js';
import { refreshFlags } from './flags.js';
import { watchHints } from './hints.js';
import { noticeQueName } from './que-memory.js';
import { createQueue, reloadConfig, startQueue, stopQueue } from './queue-engine.js';
import { runCommand, runOwnCommand } from './run-command.js';
import type { QueueState } from './state.js';
import { Spawner } from '../spawn/spawner.js';

const root = rootLayout(installRoot());
process.chdir(root.root);
const name = process.argv[2] ?? '';
const log = createLogger({ queue: name });

/** The queue's lock, once taken. */
let lock: ProcessLock | undefined;
/** Set once the queue serves: exit() then stops it in order. */
let stopServing: ((code: number) => void) | undefined;
function exit(code: number): void {
  if (stopServing) return stopServing(code);
  log.flush();
  process.exit(code);
}
if (!followParent(() => exit(0))) process.exit(0);
process.on('SIGTERM', () => exit(0));
process.on('SIGINT', () => exit(0));

function fatal(message: string): never {
  lock?.markExiting();
  log.fatal(message);
  log.flush();
  // RQ sleeps 5 s first, so a supervisor restarting it does not spin; a parent that goes
  // meanwhile (no event loop runs here to hear it) is seen within 100 ms, and this exits.
  const until = Date.now() + Number(process.env['RQ_FATAL_DELAY_MS'] ?? 5000);
  const ppid = process.ppid;
  for (let left = until - Date.now(); left > 0 && process.ppid === ppid; left = until - Date.now()) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.min(left, 100));
  }
  process.exit(1);
}

if (!isValidQueueName(name)) fatal(`invalid queue name [${String(name)}]. Exiting.`);
const layout = queueLayout(root, name);
if (!fs.existsSync(layout.dir)) fatal(`no queue directory ${layout.dir}. Exiting.`);
process.title = `[rq-que] [${name}]`;
const taken = await takeLock(root, `queue ${name}`, {
  waitWhile: (holder) => holder.exiting,
  onWait: (holder) => log.warn({ holder: holder.pid }, `waiting for the previous process of queue ${name} (${holderName(holder)}) to exit`),
}).catch((e: unknown) => fatal(`cannot take the lock of queue ${name}: ${coerceError(e).message}. Exiting.`));
if ('holder' in taken) fatal(`queue ${name} is already served by ${holderName(taken.holder)}. Exiting.`);
lock = taken.lock;
fs.writeFileSync(layout.pidFile, `${process.pid}\n`);

let host;
try {
  host = readMainConfig(root);
} catch (e) {
  const err = coerceError(e);
  const cause = err.cause === undefined ? '' : ` (${coerceError(err.cause).message})`;
  fatal(`Invalid main rq config for ${name}: ${err.message}${cause}. Exiting.`);
}
let config;
try {
  config = parseQueueConfig(fs.readFileSync(layout.configFile, 'utf8'), layout.configFile);
} catch (e) {
  fatal(`Invalid queue config for ${name}: ${coerceError(e).message}. Exiting.`);
}

ensureQueueDirs(layout);
const committer = createGroupCommitter();
const spawner = new Spawner(name, log, Number(process.env['RQ_SPAWNER_IDLE_MS'] ?? 300_000));
const others = new QueueClient(root);
const queue: QueueState = createQueue(
  {
    root,
    layout,
    host,
    store: createMessageStore(layout, committer),
    committer,
    log,
    // Another queue's process may be restarting: the client waits for it (client/call.ts).
    callQueue: (target, command, arg) => (target === name ? runOwnCommand(queue, command, arg) : others.send(target, command, arg)),
    spawner,
    indexCompactLines: Number(process.env['RQ_INDEX_COMPACT_LINES'] ?? 50_000),
  },
  config,
);

let exiting = false;
/**
 * Start nothing more and take no new request (closing the server removes the socket), and
 * exit once the spawners have gone (reaped here, not left to init) and the requests under
 * way have been answered, waiting at most a second for either.
 */
function stop(code: number): void {
  if (exiting) return;
  exiting = true;
  lock?.markExiting();
  stopQueue(queue);
  const answered = new Promise<void>((resolve) => {
    server.close(() => resolve());
    setTimeout(resolve, 1_000).unref();
  });
  void Promise.all([spawner.close(1_000), answered]).then(() => {
    log.flush();
    process.exit(code);
  });
}

// Hints only: an operator dropping a message into que/ by hand, or touching a flag file.
// Watching before recovery lists que/ leaves no gap for an entry to slip through.
const queDir = layout.stateDir('que');
watchHints(
  queDir,
  root.configDir,
  [path.basename(layout.downFlag), path.basename(layout.pauseFlag)],
  {
    queNames: (names) => {
      for (const id of names) noticeQueName(queue, id);
    },
    queOverflow: () => {
      for (const id of fs.readdirSync(queDir)) noticeQueName(queue, id);
    },
    flags: () => refreshFlags(queue),
  },
  log,
);

startQueue(queue);

const server = createRpcServer(async (command, argument, conn) => {
  if (command === 'shutdown') {
    setImmediate(() => exit(0));
    return '["ok"]';
  }
  const reply = await runCommand(queue, command, argument, conn);
  return Array.isArray(reply) && reply.length === 1 && reply[0] === 'ERROR' ? '[ "ERROR" ]' : JSON.stringify(reply);
});
fs.rmSync(layout.socket, { force: true });
listenOwnerOnly(server, layout.socket, () => log.info({ socket: layout.socket }, 'queue started'));
server.on('error', (e) => fatal(`cannot serve ${layout.socket}: ${e.message}`));
stopServing = stop;

process.on('SIGHUP', () => reloadConfig(queue));

