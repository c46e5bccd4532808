/**
 * The filesystem database of one queue: every on-disk transition of a message, written
 * once. The queue process is the only writer of its queue's directories.
 *
 * A message is `<state>/<id>/` holding `msg`, `status`, `pid`, `job/` and `attach/`. A
 * transition is one rename of that directory. Durable transitions (`create`, `enqueue`,
 * `move`, `lease`, `rewrite`, `remove`) commit through the group committer: the change's
 * record (journal.ts: the whole `msg` it writes, its status, its small attachments) is
 * appended to the queue's journal and synced, then the files are renamed into place,
 * with no fsync of their own (a checkpoint makes them durable). Whatever enters `que`
 * has its index entry handed back. Attachments too big for a record
 * (staging.ts), a `msg` too big for one, linked attachments and an external id's marker are made durable
 * where they are, as before the journal: fsynced, then the rename, then the directory.
 * `claim` (que → run) is a bare rename: a crash before it is durable leaves the message
 * in `que`, where it belongs. A clean's `discard` (done, relayed or err → gone) is a
 * bare rename into the queue's trash, and its record follows without being waited for:
 * a crash that loses it leaves the message where it was, and the next clean takes it.
 *
 * The store is the only code that writes or moves message files: attachments
 * (attachments.ts) and a run's `pid` and `job/` (run-files.ts) are its parts too, and
 * what start-up does with what a crash left is recover.ts.
 *
 * Preconditions are the renames themselves: a missing source is ENOENT, which becomes
 * `RqError('RQ_NOT_IN_STATE')` and is never ignored. A full disk (ENOSPC, EDQUOT) is
 * `RqError('RQ_NO_SPACE')`, `no space left on device: queues/<q>`, whichever write met
 * it, and a write that fails leaves no temp file behind.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError, asNoSpace, errnoCode, isNoSpace } from '../domain/errors.js';
import { idTimestamp } from '../domain/ids.js';
import { parseMessage, type Message } from '../domain/message.js';
import { HASHED_STATES, isLegalMove, type State } from '../domain/states.js';
import { EXT_ID_FILE } from './ext-ids.js';
import type { GroupCommitter } from './group-commit.js';
import { createAttachmentStore, linkOrCopy, type AttachmentStore } from './attachments.js';
import { countHashed, hashedIds, isMessageName, stateGroups, type MessageGroup } from './hashed-tree.js';
import { lstatOrUndefined, readdirOrEmptySync } from './if-present.js';
import type { QueueLayout } from './layout.js';
import { createRunFiles, type RunFiles } from './run-files.js';
import { createSpareDirs, type SpareDir } from './spare-dirs.js';
import { recordLine, undoLine } from './journal.js';
import { openForWrite, plan, record, removeTemps, stage, stageContents, writeLater, writeStaged, type JobStatus, type Later, type MoveOptions, type Plan } from './staging.js';

export type { JobStatus, MoveOptions } from './staging.js';
import { entryFromMessage, type QueEntry } from './que-index.js';

export interface CreateOptions {
  /** Attachments (`attach/<name>`, names already checked) written with the message. */
  files?: Readonly<Record<string, Buffer>>;
  /**
   * An external id for the new message (ext-ids.ts): its marker file's content, and the
   * claim of the index entry, made once the file is written (a throw abandons the create);
   * `dir` is fsynced with the commit.
   */
  marker?: (msg: Message) => { content: Buffer; claim: (file: string) => void; dir: string } | undefined;
  /** Called with the new id once everything is written, and awaited before the commit (an RPC client's announcement). */
  allocated?: Allocated;
  /** Attachments of another message (its directory, of this queue or another), hard-linked (or copied) in with the message (a clone's, a moved one's). */
  linkFrom?: { dir: string; names: readonly string[] };
}

/** Told a new message's short id before its commit; the commit waits for it. */
export type Allocated = (shortId: string) => Promise<void>;

/** A new message, with its que index entry when it went straight to `que`. */
export interface Created {
  msg: Message;
  entry?: QueEntry;
}

export interface MessageStore extends AttachmentStore, RunFiles {
  /** Allocate an id, write `msg` and commit it to `prep` or straight to `que`. */
  create(build: (shortId: string) => Message, to: 'prep' | 'que', opts?: CreateOptions): Promise<Created>;
  /** A durable move into `que`, saving `msg` (the index is made from it); returns the index entry. */
  enqueue(id: string, from: 'prep' | 'run' | 'err', opts: MoveOptions & { msg: Message }): Promise<QueEntry>;
  /** A durable move into a final state. */
  move(id: string, from: State, to: 'done' | 'relayed' | 'err', opts?: MoveOptions): Promise<void>;
  /** que → run for an external worker's lease, durable, saving `msg` (which holds the lease). */
  lease(id: string, msg: Message): Promise<void>;
  /** Rewrite a message where it is, durably (a `que` message gets its new index entry). */
  rewrite(state: State, id: string, opts: MoveOptions & { msg: Message }): Promise<void>;
  /** que → run, a bare rename (see above). */
  claim(id: string): void;
  /**
   * run → que, a bare rename that undoes a claim whose worker never started: `msg` is as
   * it was in que, so its index line is too, and a crash before the rename is durable
   * leaves it in run, which start-up recovery moves back the same way. Its pid file (and
   * any temp file a failed write left) is removed first.
   */
  unclaim(id: string): void;
  /** Delete a message for good, durably: its record, then its directory. */
  remove(state: State, id: string): Promise<void>;
  exists(state: State, id: string): boolean;
  readMsg(state: State, id: string): Message;
  /** `readMsg` of a message listed by `groups` (in directory `dir`), asynchronously: a walk of a big state never blocks the event loop. */
  readGroupMsg(dir: string, id: string): Promise<Message>;
  /** Rewrite `msg` in place (tmp fsynced, rename): a crash leaves the old `msg` or the new one, whole. */
  writeMsg(state: State, id: string, msg: Message): void;
  readStatus(state: State, id: string): { job_status: JobStatus } | undefined;
  writeStatus(state: State, id: string, status: JobStatus): void;
  /** Entries of a flat state directory (que, run, err), temp names excluded. */
  listFlat(state: State): string[];
  /** The ids in `prep`, once the half-made allocations (`prep/_*`) a crash left are removed. */
  sweepPrep(): string[];
  /**
   * Ids in a hashed state, newest first, from the `offset`th on, read
   * lazily: a directory is listed when the walk reaches it, and a skipped minute
   * directory is only counted, never sorted.
   */
  hashedIds(state: State, offset?: number): Iterable<string>;
  countHashed(state: State): number;
  /**
   * A state's messages in groups: a directory and the names of the messages in it, every
   * directory listed asynchronously (a big state never blocks the event loop). A flat
   * state is one group; a hashed state is a group per minute directory, listed when the
   * walk reaches it. With `oldest`, groups come oldest first and the names in each
   * ascending; else in no order.
   */
  groups(state: State, order?: 'oldest'): AsyncIterable<MessageGroup>;
  /**
   * When a message entered its state, epoch ms: its directory's ctime. The rename into the
   * state sets it (Linux updates a renamed inode's ctime on ext4, xfs, btrfs and tmpfs),
   * and nothing changes the directory of a done, relayed or err message after that.
   * Undefined when the message is no longer there.
   */
  enteredAt(state: State, id: string): Promise<number | undefined>;
  /**
   * Take a message out of its state for good: one rename into the queue's trash
   * (layout.ts `trashDir`), the commit point of a clean; its files are deleted later
   * (disk-usage.ts `emptyTrash`). False when the message is no longer there.
   */
  discard(state: State, id: string): boolean;
  /** Remove a hashed state's minute directory once it is empty, then its hour and day directories if they are empty too. */
  pruneHashed(minuteDir: string): void;
  /** The queue is put away or stops: remove the directories made ahead for new messages (spare-dirs.ts). */
  close(): void;
}

export type { MessageGroup } from './hashed-tree.js';

/**
 * Most messages in these states have no `status` file: a stat first is cheaper than the
 * thrown ENOENT of a failed read (about 1 µs against 10). Elsewhere the file is almost
 * always there, and the stat would only add a syscall.
 */
const STATUS_OFTEN_MISSING: ReadonlySet<State> = new Set(['prep', 'que']);

function notInState(id: string, from: State, cause: unknown): RqError {
  return new RqError('RQ_NOT_IN_STATE', `message ${id} is not in ${from}`, { cause });
}

export function createMessageStore(q: QueueLayout, committer: GroupCommitter): MessageStore {
  const attachments = createAttachmentStore(q);
  const spares = createSpareDirs(q.stateDir('prep'));
  const madeHashDirs = new Set<string>();
  const where = path.relative(q.root.root, q.dir);

  /** A failure as the store reports it: a full disk is RQ_NO_SPACE naming the queue's directory. */
  const refusal = (e: unknown): unknown => asNoSpace(e, where);

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

  /** Write `file` through `<file>.tmp` (or `tmp`) and rename it in place; a failed write removes the temp file. */
  function replaceFile(tmp: string, file: string, content: string, durable = false): void {
    try {
      if (durable) fs.closeSync(syncedFd(openForWrite(tmp, content)));
      else fs.writeFileSync(tmp, content);
    } catch (e) {
      fs.rmSync(tmp, { force: true });
      throw refusal(e);
    }
    fs.renameSync(tmp, file);
  }

  function syncedFd(fd: number): number {
    try {
      fs.fsyncSync(fd);
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
    return fd;
  }

  /** The one durable move of a message directory; `fresh`: it enters que never having run. */
  async function transfer(id: string, from: State, to: State, opts: MoveOptions, fresh = false): Promise<void> {
    if (!isLegalMove(from, to)) throw new RqError('RQ_NOT_IN_STATE', `illegal move ${from} → ${to} for ${id}`);
    const src = q.msgDir(from, id);
    const dst = q.msgDir(to, id);
    let syncDirs: string[];
    try {
      syncDirs = HASHED_STATES.has(to) ? ensureHashedParent(dst) : [q.stateDir(to)];
    } catch (e) {
      throw refusal(e);
    }
    const renames: Array<[string, string]> = [];
    const later: Later = { dirs: [], files: [] };
    let p: Plan;
    try {
      p = plan(opts, from === 'prep' ? src : undefined);
      stageContents(from, src, opts, p, later, renames);
    } catch (e) {
      throw isNoSpace(e) ? refusal(e) : notInState(id, from, e);
    }
    if (renames.length > 0) syncDirs.push(dst);
    renames.push([src, dst]);
    try {
      await committer.commit({
        journal: record(id, to, opts, p, fresh),
        ...(later.files.length > 0 ? { prepare: () => writeLater(later) } : {}),
        renames,
        undo: undoLine(id),
        ...(p.keep ? { fsyncFds: p.keep, syncDirs } : {}),
      });
    } catch (e) {
      removeTemps(renames);
      if (errnoCode(e) !== 'ENOENT') throw refusal(e);
      if (fs.existsSync(src) && HASHED_STATES.has(to)) {
        // The cleaner removed a hashed directory this process had made: make it again.
        madeHashDirs.delete(path.dirname(dst));
        return transfer(id, from, to, opts, fresh);
      }
      throw notInState(id, from, e);
    }
  }

  return {
    ...attachments,
    ...createRunFiles(q),

    async create(build, to, opts = {}) {
      const ts = idTimestamp(new Date());
      let spare: SpareDir;
      try {
        spare = spares.take(ts);
      } catch (e) {
        throw refusal(e);
      }
      const tmpDir = spare.dir;
      let msg: Message;
      let p: Plan = { bigMsg: false };
      const later: Later = { dirs: [], files: [] };
      const syncDirs = [q.stateDir(to)];
      try {
        const shortId = `${ts}.${spare.ino}`;
        msg = build(shortId);
        const marker = opts.marker?.(msg);
        p = plan({ msg, ...(opts.files ? { files: opts.files } : {}) });
        // Made durable in place (fsyncs kept here) when the record cannot carry it all.
        if (marker || (opts.linkFrom && opts.linkFrom.names.length > 0)) p.keep ??= [];
        const { keep } = p;
        stage(path.join(tmpDir, 'msg'), p.msgText ?? '', keep, later);
        if (opts.files) {
          // Written in place: the whole directory is renamed into its state at once.
          const attach = path.join(tmpDir, 'attach');
          if (keep) fs.mkdirSync(attach);
          else later.dirs.push(attach);
          for (const [name, data] of Object.entries(opts.files)) stage(path.join(attach, name), data, keep, later);
          keep?.push(fs.openSync(attach, 'r'));
        }
        if (opts.linkFrom && opts.linkFrom.names.length > 0) {
          const from = path.join(opts.linkFrom.dir, 'attach');
          const attach = path.join(tmpDir, 'attach');
          fs.mkdirSync(attach, { recursive: true });
          for (const name of opts.linkFrom.names) linkOrCopy(path.join(from, name), path.join(attach, name));
          keep?.push(fs.openSync(attach, 'r'));
        }
        if (marker) {
          const file = path.join(tmpDir, EXT_ID_FILE);
          writeStaged(file, marker.content, keep);
          marker.claim(file);
          syncDirs.push(marker.dir);
        }
        keep?.push(fs.openSync(tmpDir, 'r'));
        await opts.allocated?.(shortId);
      } catch (e) {
        for (const fd of p.keep ?? []) fs.closeSync(fd);
        fs.rmSync(tmpDir, { recursive: true, force: true });
        throw refusal(e);
      }
      const entry = to === 'que' ? entryFromMessage(msg, true) : undefined;
      try {
        await committer.commit({
          journal: record(msg.msg_id, to, { msg }, p, to === 'que'),
          ...(later.files.length > 0 ? { prepare: () => writeLater(later) } : {}),
          renames: [[tmpDir, q.msgDir(to, msg.msg_id)]],
          undo: undoLine(msg.msg_id),
          ...(p.keep ? { fsyncFds: p.keep, syncDirs } : {}),
        });
      } catch (e) {
        // Not made: nothing half-made stays (an external id it claimed is free again).
        fs.rmSync(tmpDir, { recursive: true, force: true });
        throw refusal(e);
      }
      return entry ? { msg, entry } : { msg };
    },

    async enqueue(id, from, opts) {
      const fresh = from === 'prep' && opts.status === undefined;
      await transfer(id, from, 'que', opts, fresh);
      return entryFromMessage(opts.msg, fresh);
    },

    move: (id, from, to, opts = {}) => transfer(id, from, to, opts),

    lease: (id, msg) => transfer(id, 'que', 'run', { msg }),

    async rewrite(state, id, opts) {
      const dir = q.msgDir(state, id);
      const p = plan(opts);
      const renames: Array<[string, string]> = [];
      const later: Later = { dirs: [], files: [] };
      try {
        stageContents(state, dir, opts, p, later, renames);
      } catch (e) {
        throw isNoSpace(e) ? refusal(e) : notInState(id, state, e);
      }
      try {
        await committer.commit({
          journal: record(id, state, opts, p),
          ...(later.files.length > 0 ? { prepare: () => writeLater(later) } : {}),
          renames,
          undo: undoLine(id),
          ...(p.keep ? { fsyncFds: p.keep, syncDirs: [dir] } : {}),
        });
      } catch (e) {
        throw refusal(e);
      }
    },

    claim(id) {
      try {
        fs.renameSync(q.msgDir('que', id), q.msgDir('run', id));
      } catch (e) {
        throw isNoSpace(e) ? refusal(e) : notInState(id, 'que', e);
      }
    },

    unclaim(id) {
      const dir = q.msgDir('run', id);
      for (const name of ['pid', 'pid.tmp', 'status.tmp', 'tmp']) fs.rmSync(path.join(dir, name), { force: true });
      try {
        fs.renameSync(dir, q.msgDir('que', id));
      } catch (e) {
        throw isNoSpace(e) ? refusal(e) : notInState(id, 'run', e);
      }
    },

    async remove(state, id) {
      await committer.commit({ journal: recordLine({ id, to: 'gone' }) }).catch((e: unknown) => {
        throw refusal(e);
      });
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

    async readGroupMsg(dir, id) {
      const file = path.join(dir, id, 'msg');
      const where = path.relative(q.root.root, file);
      let text: string;
      try {
        text = await fs.promises.readFile(file, 'utf8');
      } catch (e) {
        throw new RqError('RQ_BAD_MESSAGE', `${where}: msg is unreadable`, { cause: e });
      }
      return parseMessage(text, where);
    },

    writeMsg(state, id, msg) {
      const dir = q.msgDir(state, id);
      replaceFile(path.join(dir, 'tmp'), path.join(dir, 'msg'), JSON.stringify(msg), true);
    },

    readStatus(state, id) {
      const file = path.join(q.msgDir(state, id), 'status');
      if (STATUS_OFTEN_MISSING.has(state) && !fs.existsSync(file)) return undefined;
      try {
        const v = JSON.parse(fs.readFileSync(file, 'utf8')) as { job_status?: unknown };
        return { job_status: typeof v.job_status === 'string' ? v.job_status : null };
      } catch {
        return undefined;
      }
    },

    writeStatus(state, id, status) {
      const dir = q.msgDir(state, id);
      replaceFile(path.join(dir, 'status.tmp'), path.join(dir, 'status'), JSON.stringify({ job_status: status }));
    },

    listFlat(state) {
      return readdirOrEmptySync(q.stateDir(state)).filter(isMessageName);
    },

    sweepPrep() {
      const dir = q.stateDir('prep');
      const names = readdirOrEmptySync(dir);
      for (const name of names) if (name.startsWith('_')) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
      return names.filter(isMessageName);
    },

    hashedIds: (state, offset) => hashedIds(q.stateDir(state), offset),

    countHashed: (state) => countHashed(q.stateDir(state)),

    groups: (state, order) => stateGroups(q.stateDir(state), HASHED_STATES.has(state), order),

    async enteredAt(state, id) {
      return (await lstatOrUndefined(q.msgDir(state, id)))?.ctimeMs;
    },

    discard(state, id) {
      const from = q.msgDir(state, id);
      const to = q.trashEntry(state, id);
      try {
        fs.renameSync(from, to);
      } catch (e) {
        if (errnoCode(e) !== 'ENOENT') throw e;
        // The message is gone, or the trash is not there yet.
        if (!fs.existsSync(from)) return false;
        fs.mkdirSync(q.trashDir, { recursive: true });
        fs.renameSync(from, to);
      }
      // Not waited for: a crash that loses it finds the message in the trash (replay.ts).
      committer.commit({ journal: recordLine({ id, to: 'gone' }) }).catch(() => undefined);
      return true;
    },

    close: () => spares.close(),

    pruneHashed(minuteDir) {
      madeHashDirs.delete(minuteDir);
      for (let d = minuteDir, level = 0; level < 3; level++, d = path.dirname(d)) {
        try {
          fs.rmdirSync(d);
        } catch {
          return; // not empty (a message arrived, or other minutes remain), or gone
        }
      }
    },
  };
}
