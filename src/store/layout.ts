/**
 * Paths of an install root (docs/layout.md). Queues live in the
 * real directory `queues/`; `queue -> queues` is kept for RQ compatibility, and every
 * path RQ shows to users (`path` of a message, attachment paths, `RQ_MSG_DIR`) goes
 * through `queue/`, as RQ's did. Nothing here touches the disk except `ensureQueueDirs`.
 *
 * Queue names of the protocols' rule may be 255 bytes long (names.ts). Where a path
 * built from such a name would not fit, it is shortened the same way for every process:
 * a flag file name longer than a file name may be (255 bytes) keeps a prefix of the
 * queue name plus a hash of it. (A socket path longer than a Unix socket address is
 * reached through its directory, see rpc.ts.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { HASHED_STATES, STATES, type State } from '../domain/states.js';
import { hashParts } from '../domain/ids.js';
import { isValidQueueName } from '../domain/names.js';

export interface RootLayout {
  root: string;
  configDir: string;
  mainConfig: string;
  queuesDir: string;
  /** rq-mgr's pid file and RPC socket (`config/queuemgr.pid`, `config/queuemgr.sock`). */
  mgrPidFile: string;
  mgrSocket: string;
  /** The key that makes the names of the root's locks secret (process-lock.ts). */
  lockKeyFile: string;
  /** rq-mgr's log when it runs as a daemon. */
  logFile: string;
  /** The external ids unique across the server (ext-ids.ts). */
  serverIdsDir: string;
}

export function rootLayout(root: string): RootLayout {
  const queuesDir = path.join(root, 'queues');
  return {
    root,
    configDir: path.join(root, 'config'),
    mainConfig: path.join(root, 'config', 'config.json'),
    queuesDir,
    mgrPidFile: path.join(root, 'config', 'queuemgr.pid'),
    mgrSocket: path.join(root, 'config', 'queuemgr.sock'),
    lockKeyFile: path.join(root, 'config', 'lock.key'),
    logFile: path.join(root, 'log', 'rq.log'),
    serverIdsDir: path.join(queuesDir, '.ids'),
  };
}

export interface QueueLayout {
  root: RootLayout;
  name: string;
  dir: string;
  configFile: string;
  pidFile: string;
  socket: string;
  /** The durable index of `que/` (see que-index.ts). */
  indexFile: string;
  /** When each cron entry last fired (queue/cron.ts). */
  cronFile: string;
  /** A pull queue's external ids, unique in the queue (ext-ids.ts). */
  idsDir: string;
  /**
   * Messages a clean has taken out of their state, named `<state>.<id>`, until their
   * files are deleted (message-store.ts `discard`, disk-usage.ts `emptyTrash`).
   */
  trashDir: string;
  /** Where `discard` puts a message: `<trashDir>/<state>.<id>`. */
  trashEntry: (state: State, id: string) => string;
  downFlag: string;
  pauseFlag: string;
  stateDir(state: State): string;
  /** Directory of a message; done/relayed are hashed by the id's time (`YYYYMMDD/HH/MM/<id>`). */
  msgDir(state: State, id: string): string;
  /** The same, as RQ shows it: relative to the root, through `queue/`. */
  displayPath(state: State, id: string): string;
  /** Absolute, through the `queue` symlink (RQ_MSG_DIR, attachment paths). */
  publicPath(state: State, id: string): string;
}

/** Linux's longest file name (NAME_MAX). */
const NAME_MAX = 255;

/** node:crypto is loaded only for such a name: bin/rq builds paths here, and loading it costs every call about 1.5 ms. */
const nameHash = (name: string): string => process.getBuiltinModule('node:crypto').createHash('sha256').update(name).digest('hex').slice(0, 32);

/** `<name><suffix>`, or a prefix of the name, `~`, its hash and the suffix when that is too long for a file name. */
export function fittedFileName(name: string, suffix: string): string {
  const whole = `${name}${suffix}`;
  if (Buffer.byteLength(whole) <= NAME_MAX) return whole;
  return `${name.slice(0, 160)}~${nameHash(name)}${suffix}`;
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
    root,
    name,
    dir,
    configFile: path.join(dir, 'config.json'),
    pidFile: path.join(dir, 'queue.pid'),
    socket: path.join(dir, 'queue.sock'),
    indexFile: path.join(dir, 'que.index'),
    cronFile: path.join(dir, 'cron.json'),
    idsDir: path.join(dir, 'ids'),
    trashDir: path.join(dir, '.trash'),
    trashEntry: (state, id) => path.join(dir, '.trash', `${state}.${id}`),
    downFlag: path.join(root.configDir, fittedFileName(name, '.down')),
    pauseFlag: path.join(root.configDir, fittedFileName(name, '.pause')),
    stateDir: (state) => path.join(dir, state),
    msgDir: (state, id) => path.join(dir, relMsgPath(state, id)),
    displayPath: (state, id) => path.join('queue', name, relMsgPath(state, id)),
    publicPath: (state, id) => path.join(root.root, 'queue', name, relMsgPath(state, id)),
  };
}

/** Every queue directory of the install, sorted (a deleted queue's `<q>.deleted.<n>` is no queue name). */
export function queueDirNames(root: RootLayout): string[] {
  return fs
    .readdirSync(root.queuesDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && isValidQueueName(d.name))
    .map((d) => d.name)
    .sort();
}

/** Create the six state directories of a queue (RQ's queue creation does `mkdir -p`). */
export function ensureQueueDirs(q: QueueLayout): void {
  // One listing when they are all there (a host loads thousands of queues).
  let present: string[] = [];
  try {
    present = fs.readdirSync(q.dir);
  } catch {
    // made below
  }
  for (const state of STATES) if (!present.includes(state)) fs.mkdirSync(q.stateDir(state), { recursive: true });
}
