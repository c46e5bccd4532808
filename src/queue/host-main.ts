/**
 * Entry point of a host process: `node dist/src/queue/host-main.js <n>`, started by
 * rq-mgr, never by hand. A host serves many queues, each with everything a queue process
 * of its own gives it (served-queue.ts: its lock, its pid file naming the host, its
 * socket, recovery), so a queue costs a few kilobytes while it is put away instead of a
 * process. rq-mgr hosts the queues that run no script of their own: pull queues (made by
 * the front doors or by hand) and the built-in queues, which run rq's own scripts.
 *
 * rq-mgr says which queues to open and close over the IPC channel (rpc/host-api.ts). Each
 * queue is loaded on demand and put away after `RQ_UNLOAD_MS` (default 10 s) idle. One
 * watch of `config/` serves the admin flags of every queue here. SIGHUP reads every
 * queue's config again; TERM, or the loss of rq-mgr, stops every queue in order and exits.
 * A `shutdown` command stops that one queue: rq-mgr hears it is gone, as it would hear a
 * queue process exit, and opens it again.
 */
process.env['UV_THREADPOOL_SIZE'] ??= '16';

import path from 'node:path';
import { coerceError } from '../domain/errors.js';
import { QueueClient } from '../client/queue-client.js';
import { installRoot } from '../lib/install-root.js';
import { createLogger } from '../lib/logger.js';
import { followParent } from '../lib/parent-link.js';
import type { FromHost, ToHost } from '../rpc/host-api.js';
import type { QueueStatus } from '../rpc/queue-api.js';
import { readMainConfig } from '../store/config-files.js';
import { rootLayout } from '../store/layout.js';
import { watchFlags } from './hints.js';
import { openQueue, type ServeOptions, type ServedQueue } from './served-queue.js';

const root = rootLayout(installRoot());
process.chdir(root.root);
const hostId = process.argv[2] ?? '';
const log = createLogger({ host: hostId });
process.title = `[rq-host] [${hostId}]`;

const queues = new Map<string, ServedQueue>();
/** Queue by the name of each of its flag files. */
const byFlag = new Map<string, ServedQueue>();

let exiting = false;
function exit(code: number): void {
  if (exiting) return;
  exiting = true;
  void Promise.all([...queues.values()].map((q) => q.stop(1_000, false))).then(() => {
    log.flush();
    process.exit(code);
  });
}
if (!followParent(() => exit(0))) process.exit(0);
process.on('SIGTERM', () => exit(0));
process.on('SIGINT', () => exit(0));

function tell(m: FromHost): void {
  if (process.connected) process.send?.(m);
}

let host;
try {
  host = readMainConfig(root);
} catch (e) {
  log.fatal(`Invalid main rq config: ${coerceError(e).message}. Exiting.`);
  log.flush();
  process.exit(1);
}

const options: ServeOptions = {
  root,
  host,
  others: new QueueClient(root),
  spawnerIdleMs: Number(process.env['RQ_SPAWNER_IDLE_MS'] ?? 300_000),
  indexCompactLines: Number(process.env['RQ_INDEX_COMPACT_LINES'] ?? 20_000),
  unloadAfterMs: Number(process.env['RQ_UNLOAD_MS'] ?? 10_000),
  onShutdown: () => undefined,
  hostStats: (names) => {
    const out: Record<string, QueueStatus> = {};
    for (const name of names ?? queues.keys()) {
      const q = queues.get(name);
      if (q) out[name] = q.statsNow();
    }
    return out;
  },
};

async function open(name: string): Promise<void> {
  if (queues.has(name)) return tell({ t: 'opened', queue: name });
  const qlog = log.child({ queue: name });
  const q = await openQueue(name, qlog, {
    ...options,
    onShutdown: () => inTurn(name, () => close(name).then(() => tell({ t: 'gone', queue: name }))),
  });
  if ('refused' in q) {
    qlog.error(q.refused);
    return tell({ t: 'refused', queue: name, reason: q.refused });
  }
  queues.set(name, q);
  for (const flag of [q.layout.downFlag, q.layout.pauseFlag]) byFlag.set(path.basename(flag), q);
  qlog.debug({ socket: q.layout.socket }, 'queue started');
  tell({ t: 'opened', queue: name });
}

async function close(name: string): Promise<void> {
  const q = queues.get(name);
  if (!q) return;
  queues.delete(name);
  for (const flag of [q.layout.downFlag, q.layout.pauseFlag]) byFlag.delete(path.basename(flag));
  await q.stop(1_000, true);
}

/** The open or close under way for each queue: the next waits for it, so a close never overtakes the open before it. */
const turns = new Map<string, Promise<void>>();
function inTurn(name: string, op: () => Promise<void>): void {
  const next = (turns.get(name) ?? Promise.resolve()).then(op, op);
  turns.set(name, next);
  void next.finally(() => {
    if (turns.get(name) === next) turns.delete(name);
  });
}

process.on('message', (m: ToHost) => {
  if (exiting) return;
  if (m.t === 'open') inTurn(m.queue, () => open(m.queue));
  else inTurn(m.queue, () => close(m.queue).then(() => tell({ t: 'closed', queue: m.queue })));
});

watchFlags(root.configDir, (file) => {
  if (file !== null) byFlag.get(file)?.flagsChanged();
  else for (const q of queues.values()) q.flagsChanged();
}, log);

setInterval(() => {
  const now = Date.now();
  for (const q of queues.values()) q.putAwayIfIdle(now);
}, 1_000).unref();

process.on('SIGHUP', () => {
  for (const q of queues.values()) q.reload();
});
log.info('host started');
