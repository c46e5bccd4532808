/**
 * Entry point of a queue process: `node dist/src/queue/queue-main.js <queue>`, run from
 * the install root (or with RQ_ROOT set). It writes `queue.pid`, recovers the queue,
 * serves `queue.sock`, and runs the engine until TERM, a `shutdown` RPC, or the loss of
 * its supervisor (the IPC channel closing). Workers are never signalled on exit
 * (spec/rq.md §4.3): they outlive a restart, and recovery waits for them.
 */
process.env['UV_THREADPOOL_SIZE'] ??= '16';

import fs from 'node:fs';
import path from 'node:path';
import { coerceError } from '../domain/errors.js';
import { parseMainConfig } from '../domain/main-config.js';
import { isValidQueueName } from '../domain/names.js';
import { parseQueueConfig } from '../domain/queue-config.js';
import { createLogger } from '../lib/logger.js';
import { createRpcServer, rpcCall } from '../client/rpc.js';
import { createGroupCommitter } from '../store/group-commit.js';
import { ensureQueueDirs, queueLayout, rootLayout } from '../store/layout.js';
import { createMessageStore } from '../store/message-store.js';
import { runCommand } from './commands.js';
import { watchHints } from './hints.js';
import { QueueEngine } from './queue-engine.js';

const root = rootLayout(path.resolve(process.env['RQ_ROOT'] ?? process.cwd()));
process.chdir(root.root);
const name = process.argv[2] ?? '';
const log = createLogger({ queue: name });

function fatal(message: string): never {
  log.fatal(message);
  log.flush();
  // RQ sleeps 5 s first, so a supervisor restarting it does not spin.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(process.env['RQ_FATAL_DELAY_MS'] ?? 5000));
  process.exit(1);
}

if (!isValidQueueName(name)) fatal(`invalid queue name [${name}]. Exiting.`);
const layout = queueLayout(root, name);
if (!fs.existsSync(layout.dir)) fatal(`no queue directory ${layout.dir}. Exiting.`);
process.title = `[rq-que] [${name}]`;
fs.writeFileSync(layout.pidFile, `${process.pid}\n`);

let host;
try {
  host = parseMainConfig(fs.readFileSync(root.mainConfig, 'utf8'));
} catch {
  fatal(`Invalid main rq config for ${name}. Exiting.`);
}
let config;
try {
  config = parseQueueConfig(fs.readFileSync(layout.configFile, 'utf8'), layout.configFile);
} catch (e) {
  fatal(`Invalid queue config for ${name}: ${coerceError(e).message}. Exiting.`);
}

ensureQueueDirs(layout);
const committer = createGroupCommitter();
const engine: QueueEngine = new QueueEngine(
  {
    root,
    layout,
    host,
    store: createMessageStore(layout, committer),
    committer,
    log,
    callQueue: async (queue, command, arg) => {
      const argument = JSON.stringify(arg);
      if (queue === name) return runCommand(engine, log, command, argument);
      return rpcCall(queueLayout(root, queue).socket, command, argument);
    },
  },
  config,
);

function exit(code: number): never {
  log.flush();
  process.exit(code);
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
      for (const id of names) engine.noticeQueName(id);
    },
    queOverflow: () => {
      for (const id of fs.readdirSync(queDir)) engine.noticeQueName(id);
    },
    flags: () => engine.refreshFlags(),
  },
  log,
);

engine.start();

const server = createRpcServer(async (command, argument) => {
  if (command === 'shutdown') {
    setImmediate(() => exit(0));
    return '["ok"]';
  }
  const reply = await runCommand(engine, log, command, argument);
  return Array.isArray(reply) && reply.length === 1 && reply[0] === 'ERROR' ? '[ "ERROR" ]' : JSON.stringify(reply);
});
fs.rmSync(layout.socket, { force: true });
server.listen(layout.socket, () => log.info({ socket: layout.socket }, 'queue started'));
server.on('error', (e) => fatal(`cannot serve ${layout.socket}: ${e.message}`));

process.on('SIGTERM', () => exit(0));
process.on('SIGINT', () => exit(0));
process.on('SIGHUP', () => engine.reload());
if (process.channel) process.on('disconnect', () => exit(0));

