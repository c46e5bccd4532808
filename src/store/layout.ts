/**
 * Paths of an install root (ARCHITECTURE.md "The install root"). Queues live in the
 * real directory `queues/`; `queue -> queues` is kept for RQ compatibility, and every
 * path RQ shows to users (`path` of a message, attachment paths, `RQ_MSG_DIR`) goes
 * through `queue/`, as RQ's did. Nothing here touches the disk except `ensureQueueDirs`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { HASHED_STATES, STATES, type State } from '../domain/states.js';
import { hashParts } from '../domain/ids.js';

export interface RootLayout {
  root: string;
  configDir: string;
  mainConfig: string;
  queuesDir: string;
  /** rq-mgr's pid file and RPC socket (spec/rq.md §1.3). */
  mgrPidFile: string;
  mgrSocket: string;
  /** rq-mgr's log when it runs as a daemon. */
  logFile: string;
}

export function rootLayout(root: string): RootLayout {
  return {
    root,
    configDir: path.join(root, 'config'),
    mainConfig: path.join(root, 'config', 'config.json'),
    queuesDir: path.join(root, 'queues'),
    mgrPidFile: path.join(root, 'config', 'queuemgr.pid'),
    mgrSocket: path.join(root, 'config', 'queuemgr.sock'),
    logFile: path.join(root, 'log', 'rq.log'),
  };
}

export interface QueueLayout {
  name: string;
  dir: string;
  configFile: string;
  pidFile: string;
  socket: string;
  /** The durable index of `que/` (see que-index.ts). */
  indexFile: string;
  /** When each cron entry last fired (queue/cron.ts). */
  cronFile: string;
  /**
   * Messages a clean has taken out of their state, named `<state>.<id>`, until their
   * files are deleted (message-store.ts `discard`, disk-usage.ts `emptyTrash`).
   */
  trashDir: string;
  downFlag: string;
  pauseFlag: string;
  stateDir(state: State): string;
  /** Directory of a message; done/relayed are hashed (spec/rq.md §1.8). */
  msgDir(state: State, id: string): string;
  /** The same, as RQ shows it: relative to the root, through `queue/`. */
  displayPath(state: State, id: string): string;
  /** Absolute, through the `queue` symlink (RQ_MSG_DIR, attachment paths). */
  publicPath(state: State, id: string): string;
}

function relMsgPath(state: State, id: string): string {
  if (HASHED_STATES.has(state)) {
    const parts = hashParts(id);
    if (parts) return path.join(state, ...parts, id);
  }
  return path.join(state, id);
}

export function queueLayout(root: RootLayout, name: string): QueueLayout {
  const dir = path.join(root.queuesDir, name);
  return {
    name,
    dir,
    configFile: path.join(dir, 'config.json'),
    pidFile: path.join(dir, 'queue.pid'),
    socket: path.join(dir, 'queue.sock'),
    indexFile: path.join(dir, 'que.index'),
    cronFile: path.join(dir, 'cron.json'),
    trashDir: path.join(dir, '.trash'),
    downFlag: path.join(root.configDir, `${name}.down`),
    pauseFlag: path.join(root.configDir, `${name}.pause`),
    stateDir: (state) => path.join(dir, state),
    msgDir: (state, id) => path.join(dir, relMsgPath(state, id)),
    displayPath: (state, id) => path.join('queue', name, relMsgPath(state, id)),
    publicPath: (state, id) => path.join(root.root, 'queue', name, relMsgPath(state, id)),
  };
}

/** Create the six state directories of a queue (RQ's queue creation does `mkdir -p`). */
export function ensureQueueDirs(q: QueueLayout): void {
  for (const state of STATES) fs.mkdirSync(q.stateDir(state), { recursive: true });
}
