/**
 * Locks that die with their process: one rq-mgr per install root, one process per queue,
 * one web process on the root's ports. A lock is a Linux abstract Unix socket (its name
 * starts with a NUL byte, so it is no file): binding its name fails with EADDRINUSE while
 * another process holds it, and the kernel frees it the moment the holder dies, even by
 * kill -9. The holder answers a connection with its pid (and `exiting` once it has begun
 * to exit), so a process that finds the lock taken can say who holds it, and wait for a
 * holder that is on its way out.
 *
 * Why not a lock file (proper-lockfile): a lock directory whose holder was killed is only
 * taken over once it has gone stale; with its shortest stale time (2 s), 2.2 to 2.9 s
 * after a kill -9 on our 2-core test machine (median 2.9 s of 10), a wait every restart
 * after a crash would add; and a holder whose event loop stalls longer than that loses
 * its lock to a second process. The kernel's lock passed to a waiting process 2 to 24 ms
 * after the kill (it retries every POLL_MS), and a queue process killed with -9 under
 * rq-mgr was answering again, as its successor, 314 ms later (median of 6; 373 ms before
 * the locks: noise).
 *
 * An abstract name belongs to the network namespace, not to a user: any local user may
 * bind a name first. So a name is a hash of the scope, the root directory's device and
 * inode (the same for every path that reaches it) and a random key in `config/lock.key`
 * (owner-only, made on first use), which other users cannot read: they cannot work the
 * names out. A name in use is listed in /proc/net/unix, though, and a local user who saw
 * it there could bind it while its holder is down and keep that process from starting
 * (the refusal names whatever pid that process answers; `ss -xlp`, as root, shows the
 * real one). The locks hold on one host; two hosts sharing an install root over NFS are
 * not kept apart. The key must not change while rq runs: processes started with another
 * key would not see the locks of those started before.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { errnoCode } from '../domain/errors.js';

/** The paths of an install root that a lock needs (a RootLayout, store/layout.ts, has them). */
interface LockRoot {
  root: string;
  lockKeyFile: string;
}

/** What a lock protects: rq-mgr of the root, its web process's ports, or one queue. */
export type LockScope = 'rq-mgr' | 'web' | `queue ${string}`;

/** Who holds a lock: its pid (undefined if it did not answer within a second), and whether it is exiting. */
export interface LockHolder {
  pid: number | undefined;
  exiting: boolean;
}

export interface ProcessLock {
  /** From now on, tell whoever asks that this process is exiting (a successor then waits for it). */
  markExiting(): void;
  /** Let go of the lock while this process lives on (a host process that stops serving one queue). */
  release(): void;
}

/** How often a process waiting for a lock tries to take it. */
const POLL_MS = 25;
/** How long a holder may take to answer who it is. */
const ASK_TIMEOUT_MS = 1_000;

/**
 * Take the lock `scope` of the install root. While another process holds it, `waitWhile`
 * decides (called with each answer of the holder) whether to wait for it to go, and
 * `onWait` is told once per holder waited for; when it says no, the holder is returned.
 */
export async function takeLock(
  root: LockRoot,
  scope: LockScope,
  o: { waitWhile?: (holder: LockHolder) => boolean; onWait?: (holder: LockHolder) => void } = {},
): Promise<{ lock: ProcessLock } | { holder: LockHolder }> {
  const address = lockAddress(root, scope, true)!;
  let waitedFor: number | undefined;
  for (;;) {
    const lock = await bind(address);
    if (lock) return { lock };
    // Undefined: the holder went between the bind and the question; try again at once.
    const holder = await ask(address);
    if (holder === undefined) continue;
    if (!o.waitWhile?.(holder)) return { holder };
    if (holder.pid !== waitedFor) {
      waitedFor = holder.pid;
      o.onWait?.(holder);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Who holds the lock `scope` of the install root, or undefined when no process does. */
export async function lockHolder(root: LockRoot, scope: LockScope): Promise<LockHolder | undefined> {
  const address = lockAddress(root, scope, false);
  return address === undefined ? undefined : ask(address);
}

/** How a holder is named in a log line or on the terminal: `pid 1234`. */
export function holderName(holder: LockHolder): string {
  return holder.pid === undefined ? 'a process that does not answer' : `pid ${holder.pid}`;
}

/**
 * The abstract socket name of a lock. Without a key there can be no holder: with
 * `create` false that is undefined, with `create` true the key is made.
 */
function lockAddress(root: LockRoot, scope: LockScope, create: boolean): string | undefined {
  const key = lockKey(root.lockKeyFile, create);
  if (key === undefined) return undefined;
  const st = fs.statSync(root.root);
  const hash = createHash('sha256').update(`${key}\0${st.dev}:${st.ino}\0${scope}`).digest('hex');
  return `\0rq-lock-${hash.slice(0, 40)}`;
}

/** Keys read, by file: a host takes thousands of locks, and the key does not change while rq runs. */
const keys = new Map<string, string>();

/** The key in `file`; when there is none and `create` is set, a new one, made by exactly one of the processes racing to make it. */
function lockKey(file: string, create: boolean): string | undefined {
  const known = keys.get(file);
  if (known !== undefined) return known;
  try {
    const key = fs.readFileSync(file, 'utf8');
    keys.set(file, key);
    return key;
  } catch (e) {
    if (errnoCode(e) !== 'ENOENT') throw e;
  }
  if (!create) return undefined;
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, randomBytes(16).toString('hex'), { mode: 0o600 });
  try {
    fs.linkSync(tmp, file);
  } catch (e) {
    if (errnoCode(e) !== 'EEXIST') throw e;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return fs.readFileSync(file, 'utf8');
}

/** Bind the lock's name: the lock, or undefined when another process holds it. */
function bind(address: string): Promise<ProcessLock | undefined> {
  let exiting = false;
  const server = net.createServer((sock) => {
    sock.on('error', () => sock.destroy());
    sock.end(`${process.pid}${exiting ? ' exiting' : ''}\n`);
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e) => (errnoCode(e) === 'EADDRINUSE' ? resolve(undefined) : reject(e)));
    server.listen(address, () => {
      // Held until the process ends; it keeps nothing alive.
      server.unref();
      resolve({ markExiting: () => void (exiting = true), release: () => void server.close() });
    });
  });
}

/** Ask the holder of a lock who it is; undefined when no process holds it. */
function ask(address: string): Promise<LockHolder | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const sock = net.createConnection(address);
    const done = (holder: LockHolder | undefined): void => {
      sock.destroy();
      resolve(holder);
    };
    sock.setTimeout(ASK_TIMEOUT_MS, () => done({ pid: undefined, exiting: false }));
    sock.on('data', (c: Buffer) => (text += c.toString('latin1')));
    sock.on('end', () => {
      const m = /^(\d+)( exiting)?\n$/.exec(text);
      done(m ? { pid: Number(m[1]), exiting: m[2] !== undefined } : { pid: undefined, exiting: false });
    });
    // ECONNREFUSED: the name is free (the holder is gone).
    sock.on('error', () => done(undefined));
  });
}
