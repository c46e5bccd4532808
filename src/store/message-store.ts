/**
 * The filesystem database of one queue: every on-disk transition of a message, written
 * once. The queue process is the only writer of its queue's directories.
 *
 * A message is `<state>/<id>/` holding `msg`, `status`, `pid`, `job/` and `attach/`
 * (spec/rq.md §1.9). A transition commits with one rename of that directory. Durable
 * transitions (`create`, `move`) go through the group committer: contents fsynced, then
 * the rename, then the parent directory fsynced. `claim` (que → run) is a bare rename,
 * because a crash before it is durable leaves the message in `que`, where it belongs.
 *
 * Preconditions are the renames themselves: a missing source is ENOENT, which becomes
 * `RqError('RQ_NOT_IN_STATE')` and is never ignored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError, errnoCode } from '../domain/errors.js';
import { idTimestamp } from '../domain/ids.js';
import { parseMessage, type Message } from '../domain/message.js';
import { HASHED_STATES, isLegalMove, type State } from '../domain/states.js';
import type { GroupCommitter } from './group-commit.js';
import type { QueueLayout } from './layout.js';
import { entryFromMessage, journalLine } from './que-index.js';

/** Content of a `status` file: `{"job_status": <text or null>}`. */
export type JobStatus = string | null;

export interface MoveOptions {
  /** Rewrite `msg` with this content as part of the move. */
  msg?: Message;
  /** Write this job status as part of the move. */
  status?: JobStatus;
}

export interface MessageStore {
  /** Allocate an id, write `msg` and commit it to `prep` or straight to `que`. */
  create(build: (shortId: string) => Message, to: 'prep' | 'que'): Promise<Message>;
  /** A durable transition. `msg` must be given when `to` is `que` (it feeds the index). */
  move(id: string, from: State, to: State, opts?: MoveOptions): Promise<void>;
  /** que → run, a bare rename (see above). */
  claim(id: string): void;
  remove(state: State, id: string): void;
  exists(state: State, id: string): boolean;
  readMsg(state: State, id: string): Message;
  /** Rewrite `msg` in place (tmp, rename). Made durable by the message's next move. */
  writeMsg(state: State, id: string, msg: Message): void;
  readStatus(state: State, id: string): { job_status: JobStatus } | undefined;
  writeStatus(state: State, id: string, status: JobStatus): void;
  /** Entries of a flat state directory (prep, que, run, err), temp names excluded. */
  listFlat(state: State): string[];
  /**
   * Ids in a hashed state, newest first (spec/rq.md §1.8), skipping the first `offset`
   * and stopping at `limit`. Skipped minute directories are only counted, never sorted.
   */
  listHashed(state: State, limit?: number, offset?: number): string[];
  countHashed(state: State): number;
  /** Remove half-made allocations (`prep/_*`) and temp files left by a crash. */
  sweepTemp(): void;
}

const LEVEL_RE = [/^\d{8}$/, /^\d\d$/, /^\d\d$/, /^\d\d/];

function readdirOrEmpty(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return [];
    throw e;
  }
}

function notInState(id: string, from: State, cause: unknown): RqError {
  return new RqError('RQ_NOT_IN_STATE', `message ${id} is not in ${from}`, { cause });
}

export function createMessageStore(q: QueueLayout, committer: GroupCommitter): MessageStore {
  let seq = 0;
  const madeHashDirs = new Set<string>();

  /** mkdir -p a hashed parent; returns the directories whose entries changed. */
  function ensureHashedParent(target: string): string[] {
    const parent = path.dirname(target);
    if (madeHashDirs.has(parent)) return [parent];
    const first = fs.mkdirSync(parent, { recursive: true });
    madeHashDirs.add(parent);
    if (first === undefined) return [parent];
    // New directories: sync each new one's parent so the chain itself is durable.
    const dirs = [parent];
    for (let d = parent; d !== path.dirname(first); d = path.dirname(d)) dirs.push(path.dirname(d));
    return dirs;
  }

  function openForWrite(file: string, content: string): number {
    const fd = fs.openSync(file, 'w');
    try {
      fs.writeSync(fd, content);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
    return fd;
  }

  function maybeOpen(file: string): number[] {
    try {
      return [fs.openSync(file, 'r')];
    } catch {
      return [];
    }
  }

  const store: MessageStore = {
    async create(build, to) {
      const ts = idTimestamp(new Date());
      const tmpDir = path.join(q.stateDir('prep'), `_${ts}.${process.pid}.${seq++}`);
      fs.mkdirSync(tmpDir);
      let msg: Message;
      const fds: number[] = [];
      try {
        const shortId = `${ts}.${fs.statSync(tmpDir).ino}`;
        msg = build(shortId);
        fds.push(openForWrite(path.join(tmpDir, 'msg'), JSON.stringify(msg)));
        fds.push(fs.openSync(tmpDir, 'r'));
      } catch (e) {
        for (const fd of fds) fs.closeSync(fd);
        fs.rmSync(tmpDir, { recursive: true, force: true });
        throw e;
      }
      await committer.commit({
        fsyncFds: fds,
        ...(to === 'que' ? { journal: journalLine(entryFromMessage(msg)) } : {}),
        renames: [[tmpDir, q.msgDir(to, msg.msg_id)]],
        syncDirs: [q.stateDir(to)],
      });
      return msg;
    },

    async move(id, from, to, opts = {}) {
      if (!isLegalMove(from, to)) throw new RqError('RQ_NOT_IN_STATE', `illegal move ${from} → ${to} for ${id}`);
      if (to === 'que' && !opts.msg) throw new RqError('RQ_BAD_MESSAGE', `moving ${id} to que needs its message`);
      const src = q.msgDir(from, id);
      const dst = q.msgDir(to, id);
      const fds: number[] = [];
      const renames: Array<[string, string]> = [];
      try {
        if (opts.msg) {
          fds.push(openForWrite(path.join(src, 'tmp'), JSON.stringify(opts.msg)));
          renames.push([path.join(src, 'tmp'), path.join(src, 'msg')]);
        }
        if (opts.status !== undefined) {
          fds.push(openForWrite(path.join(src, 'status.tmp'), JSON.stringify({ job_status: opts.status })));
          renames.push([path.join(src, 'status.tmp'), path.join(src, 'status')]);
        } else {
          fds.push(...maybeOpen(path.join(src, 'status')));
        }
        if (from === 'prep') fds.push(...maybeOpen(path.join(src, 'attach')));
      } catch (e) {
        for (const fd of fds) fs.closeSync(fd);
        throw notInState(id, from, e);
      }
      const syncDirs = HASHED_STATES.has(to) ? ensureHashedParent(dst) : [q.stateDir(to)];
      if (renames.length > 0) syncDirs.push(dst);
      renames.push([src, dst]);
      const journal = to === 'que' && opts.msg ? journalLine(entryFromMessage(opts.msg)) : undefined;
      try {
        await committer.commit({ fsyncFds: fds, renames, syncDirs, ...(journal ? { journal } : {}) });
      } catch (e) {
        if (errnoCode(e) !== 'ENOENT') throw e;
        if (fs.existsSync(src) && HASHED_STATES.has(to)) {
          // The cleaner removed a hashed directory this process had made: make it again.
          madeHashDirs.delete(path.dirname(dst));
          return store.move(id, from, to, opts);
        }
        throw notInState(id, from, e);
      }
    },

    claim(id) {
      try {
        fs.renameSync(q.msgDir('que', id), q.msgDir('run', id));
      } catch (e) {
        throw notInState(id, 'que', e);
      }
    },

    remove(state, id) {
      fs.rmSync(q.msgDir(state, id), { recursive: true, force: true });
    },

    exists(state, id) {
      return fs.existsSync(q.msgDir(state, id));
    },

    readMsg(state, id) {
      const where = q.displayPath(state, id);
      let text: string;
      try {
        text = fs.readFileSync(path.join(q.msgDir(state, id), 'msg'), 'utf8');
      } catch (e) {
        throw new RqError('RQ_BAD_MESSAGE', `${where}: msg is unreadable`, { cause: e });
      }
      return parseMessage(text, where);
    },

    writeMsg(state, id, msg) {
      const dir = q.msgDir(state, id);
      fs.writeFileSync(path.join(dir, 'tmp'), JSON.stringify(msg));
      fs.renameSync(path.join(dir, 'tmp'), path.join(dir, 'msg'));
    },

    readStatus(state, id) {
      const file = path.join(q.msgDir(state, id), 'status');
      // Most waiting messages have no status file; a failed open costs a thrown error (4x a stat).
      if (!fs.existsSync(file)) return undefined;
      try {
        const v = JSON.parse(fs.readFileSync(file, 'utf8')) as { job_status?: unknown };
        return { job_status: typeof v.job_status === 'string' ? v.job_status : null };
      } catch {
        return undefined;
      }
    },

    writeStatus(state, id, status) {
      const dir = q.msgDir(state, id);
      fs.writeFileSync(path.join(dir, 'status.tmp'), JSON.stringify({ job_status: status }));
      fs.renameSync(path.join(dir, 'status.tmp'), path.join(dir, 'status'));
    },

    listFlat(state) {
      return readdirOrEmpty(q.stateDir(state)).filter((n) => !n.startsWith('_') && !n.startsWith('.'));
    },

    listHashed(state, limit = Infinity, offset = 0) {
      const out: string[] = [];
      let skip = offset;
      const walk = (dir: string, level: number): void => {
        const names = readdirOrEmpty(dir).filter((n) => LEVEL_RE[level]!.test(n));
        if (level === 3 && skip >= names.length) {
          skip -= names.length;
          return;
        }
        names.sort().reverse();
        if (level === 3) {
          for (let i = skip; i < names.length && out.length < limit; i++) out.push(names[i]!);
          skip = 0;
          return;
        }
        for (const name of names) {
          if (out.length >= limit) return;
          walk(path.join(dir, name), level + 1);
        }
      };
      walk(q.stateDir(state), 0);
      return out;
    },

    countHashed(state) {
      let n = 0;
      const walk = (dir: string, level: number): void => {
        for (const name of readdirOrEmpty(dir)) {
          if (!LEVEL_RE[level]!.test(name)) continue;
          if (level === 3) n++;
          else walk(path.join(dir, name), level + 1);
        }
      };
      walk(q.stateDir(state), 0);
      return n;
    },

    sweepTemp() {
      for (const name of readdirOrEmpty(q.stateDir('prep'))) {
        if (name.startsWith('_')) fs.rmSync(path.join(q.stateDir('prep'), name), { recursive: true, force: true });
      }
    },
  };
  return store;
}
