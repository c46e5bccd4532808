/**
 * Entry point of a queue process of its own: `node dist/src/queue/queue-main.js <queue>`,
 * for the install root `installRoot()` (RQ_ROOT, as rq-mgr sets it, else the package
 * root): RQ's model, which rq-mgr keeps for queues that run a script of their own. It
 * opens the queue (served-queue.ts: its lock, `queue.pid`, recovery, `queue.sock`),
 * loaded for as long as it runs, and runs it until TERM, a `shutdown` RPC, or the loss of
 * its supervisor (parent-link.ts), whenever that happens, even while it starts. SIGHUP
 * reads its config again. Queues without a script of their own are served together by
 * host processes (host-main.ts) instead.
 * Workers are never signalled on exit (as in RQ): they outlive a restart, and
 * recovery waits for them.
 *
 * The lock makes this the queue's one writer: a second process for the queue waits while
 * the holder is exiting (a queue process whose rq-mgr died, finishing what it accepted),
 * and otherwise refuses to start, naming the holder's pid.
 *
 * RQ_INDEX_COMPACT_LINES (default 20,000) is how many records the journal may gather
 * before a checkpoint cuts it; tests lower it to checkpoint while commits are in flight.
 * RQ_SPAWNER_IDLE_MS (default 300,000: 5 minutes) is how long a spawner (spawner.ts)
 * stays without runs before it exits; tests lower it.
 */
process.env['UV_THREADPOOL_SIZE'] ??= '16';

import path from 'node:path';
import { coerceError } from '../domain/errors.js';
import { isValidQueueName } from '../domain/names.js';
import { QueueClient } from '../client/queue-client.js';
import { installRoot } from '../lib/install-root.js';
import { createLogger } from '../lib/logger.js';
import { followParent } from '../lib/parent-link.js';
import { readMainConfig } from '../store/config-files.js';
import { queueLayout, rootLayout } from '../store/layout.js';
import { watchFlags } from './hints.js';
import { openQueue, type ServedQueue } from './served-queue.js';

const root = rootLayout(installRoot());
process.chdir(root.root);
const name = process.argv[2] ?? '';
const log = createLogger({ queue: name });

/** The queue, once it serves: exit() then stops it in order. */
let queue: ServedQueue | undefined;
let exiting = false;
/**
 * Start nothing more and take no new request, and exit once the spawners have gone
 * (reaped here, not left to init) and the requests under way have been answered, waiting
 * at most a second for either.
 */
function exit(code: number): void {
  if (exiting) return;
  exiting = true;
  void (queue?.stop(1_000, false) ?? Promise.resolve()).then(() => {
    log.flush();
    process.exit(code);
  });
}
if (!followParent(() => exit(0))) process.exit(0);
process.on('SIGTERM', () => exit(0));
process.on('SIGINT', () => exit(0));

function fatal(message: string): never {
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
process.title = `[rq-que] [${name}]`;
let host;
try {
  host = readMainConfig(root);
} catch (e) {
  const err = coerceError(e);
  const cause = err.cause === undefined ? '' : ` (${coerceError(err.cause).message})`;
  fatal(`Invalid main rq config for ${name}: ${err.message}${cause}. Exiting.`);
}
const opened = await openQueue(name, log, {
  root,
  host,
  others: new QueueClient(root),
  spawnerIdleMs: Number(process.env['RQ_SPAWNER_IDLE_MS'] ?? 300_000),
  indexCompactLines: Number(process.env['RQ_INDEX_COMPACT_LINES'] ?? 20_000),
  unloadAfterMs: Infinity,
  onShutdown: () => exit(0),
});
if ('refused' in opened) fatal(`${opened.refused}. Exiting.`);
queue = opened;
const layout = queueLayout(root, name);
log.info({ socket: layout.socket }, 'queue started');
// rq-mgr waits for this word (or its ping's answer) before it counts the queue as started.
if (process.connected) process.send?.({ type: 'serving' });
const flagFiles = [path.basename(layout.downFlag), path.basename(layout.pauseFlag)];
watchFlags(root.configDir, (file) => {
  if (file === null || flagFiles.includes(file)) queue?.flagsChanged();
}, log);
process.on('SIGHUP', () => queue?.reload());
