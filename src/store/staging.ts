/**
 * The staging of a change to a message, before its commit (message-store.ts): which of its
 * parts its journal record carries and which are made durable in place (its Plan), the
 * temp files it writes (`tmp`, `status.tmp`, `attach/<name>.tmp`), now or while the
 * record syncs (Later), the renames that put them in place, and the record itself.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Message } from '../domain/message.js';
import type { State } from '../domain/states.js';
import { attachmentNames } from './attachments.js';
import { recordLine, type JournalRecord } from './journal.js';
import { entryFromMessage, journalLine } from './que-index.js';

/**
 * A change's `msg` up to this many characters, and its attachments up to this many bytes
 * in all, are written into its record; bigger ones are fsynced in place (a journal read
 * at start-up stays small).
 */
const INLINE_BYTES = 64 * 1024;

/** Content of a `status` file: `{"job_status": <text or null>}`. */
export type JobStatus = string | null;

export interface MoveOptions {
  /** Rewrite `msg` with this content as part of the move. */
  msg?: Message;
  /** Write this job status as part of the move. */
  status?: JobStatus;
  /** Write these attachments (`attach/<name>`, names already checked) as part of the move. */
  files?: Readonly<Record<string, Buffer>>;
}

/** Directories to make and files to write while a change's record syncs. */
export interface Later {
  dirs: string[];
  files: Array<[string, string | Buffer]>;
}

/**
 * How a change is made durable: what its record carries (`msg`'s text unless it is big,
 * small attachments as base64), and what is fsynced in place instead (`keep`: open
 * descriptors; undefined when the record carries it all).
 */
export interface Plan {
  msgText?: string;
  bigMsg: boolean;
  inline?: Record<string, string>;
  keep?: number[];
}

/** Attachments as a record carries them (base64), or undefined when there are none or they are too big. */
function inlined(files: Readonly<Record<string, Buffer>> | undefined): Record<string, string> | undefined {
  if (!files) return undefined;
  let bytes = 0;
  for (const data of Object.values(files)) bytes += data.length;
  if (bytes > INLINE_BYTES) return undefined;
  return Object.fromEntries(Object.entries(files).map(([name, data]) => [name, data.toString('base64')]));
}

/** `file` written and left open (for its fsync); a failed write removes it. */
export function openForWrite(file: string, content: string | Buffer): number {
  const fd = fs.openSync(file, 'w');
  try {
    const data = typeof content === 'string' ? Buffer.from(content) : content;
    for (let off = 0; off < data.length; ) off += fs.writeSync(fd, data, off);
  } catch (e) {
    fs.closeSync(fd);
    fs.rmSync(file, { force: true });
    throw e;
  }
  return fd;
}

/** Write `file`; its descriptor is kept in `keep` for an fsync, or closed. */
export function writeStaged(file: string, content: string | Buffer, keep: number[] | undefined): void {
  const fd = openForWrite(file, content);
  if (keep) keep.push(fd);
  else fs.closeSync(fd);
}

function maybeOpen(file: string): number[] {
  try {
    return [fs.openSync(file, 'r')];
  } catch {
    return [];
  }
}

/** Write `file` now, its descriptor kept in `keep` for an fsync; without `keep`, leave it to the commit's prepare (`later`). */
export function stage(file: string, content: string | Buffer, keep: number[] | undefined, later: Later): void {
  if (keep) writeStaged(file, content, keep);
  else later.files.push([file, content]);
}

/**
 * The writes left to a commit's prepare, made while the journal syncs in the thread pool.
 * On the main thread: the calls are short, and a hop to the pool and back for each
 * would cost more than it frees on two cores.
 */
export function writeLater(later: Later): Promise<void> {
  try {
    for (const dir of later.dirs) fs.mkdirSync(dir, { recursive: true });
    for (const [file, content] of later.files) fs.writeFileSync(file, content);
  } catch (e) {
    return Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
  return Promise.resolve();
}

/** Each file as `attach/<name>.tmp` in `dir`; `keep` holds their fds, `renames` what puts them in place. */
function stageFiles(dir: string, files: Readonly<Record<string, Buffer>>, keep: number[] | undefined, later: Later, renames: Array<[string, string]>): void {
  const attach = path.join(dir, 'attach');
  if (keep) fs.mkdirSync(attach, { recursive: true });
  else later.dirs.push(attach);
  for (const [name, data] of Object.entries(files)) {
    const tmp = path.join(attach, `${name}.tmp`);
    stage(tmp, data, keep, later);
    renames.push([tmp, path.join(attach, name)]);
  }
  keep?.push(fs.openSync(attach, 'r'));
}

/**
 * The files of a rewrite or move: new attachments, msg and status, staged as tmp files in
 * `src`. With `keep` (durable in place) they are written now, and their fds, and those of
 * what the message holds already, kept for an fsync; else the record carries them, and
 * they are written while it syncs (`later`). A failure removes what it staged.
 */
export function stageContents(from: State, src: string, opts: MoveOptions, p: Plan, later: Later, renames: Array<[string, string]>): void {
  const { keep } = p;
  try {
    // The source must be there now: its record is written before any file of it.
    if (!keep) fs.accessSync(src);
    if (opts.files) stageFiles(src, opts.files, keep, later, renames);
    if (p.msgText !== undefined) {
      stage(path.join(src, 'tmp'), p.msgText, keep, later);
      renames.push([path.join(src, 'tmp'), path.join(src, 'msg')]);
    }
    if (opts.status !== undefined) {
      stage(path.join(src, 'status.tmp'), JSON.stringify({ job_status: opts.status }), keep, later);
      renames.push([path.join(src, 'status.tmp'), path.join(src, 'status')]);
    } else if (keep) {
      keep.push(...maybeOpen(path.join(src, 'status')));
    }
    if (keep && from === 'prep' && !opts.files) keep.push(...maybeOpen(path.join(src, 'attach')));
  } catch (e) {
    for (const fd of keep ?? []) fs.closeSync(fd);
    removeTemps(renames);
    throw e;
  }
}

/** Remove the temp files (`tmp`, `status.tmp`, `attach/<name>.tmp`) of a change that failed. */
export function removeTemps(renames: ReadonlyArray<[string, string]>): void {
  for (const [from] of renames) if (from.endsWith('tmp')) fs.rmSync(from, { force: true });
}

/**
 * The attachments a prep message in `dir` holds (attach_message put them there), for its
 * commit: base64 for the record when small, else their descriptors, to be fsynced in place.
 */
function heldAttachments(dir: string): { inline?: Record<string, string>; fds?: number[] } {
  const names = attachmentNames(dir);
  if (names.length === 0) return {};
  const files = names.map((name) => path.join(dir, 'attach', name));
  let bytes = 0;
  for (const file of files) bytes += fs.statSync(file).size;
  if (bytes > INLINE_BYTES) return { fds: files.map((file) => fs.openSync(file, 'r')) };
  return { inline: Object.fromEntries(names.map((name, i) => [name, fs.readFileSync(files[i]!).toString('base64')])) };
}

/** A change's plan; with `heldIn`, the attachments of the prep message in that directory go with it too. */
export function plan(opts: MoveOptions, heldIn?: string): Plan {
  const msgText = opts.msg ? JSON.stringify(opts.msg) : undefined;
  const bigMsg = msgText !== undefined && msgText.length > INLINE_BYTES;
  let inline = inlined(opts.files);
  let keep: number[] | undefined = bigMsg || (opts.files && !inline) ? [] : undefined;
  if (heldIn !== undefined && !opts.files) {
    const h = heldAttachments(heldIn);
    if (h.fds) keep = [...(keep ?? []), ...h.fds];
    else inline = h.inline;
  }
  return { ...(msgText !== undefined ? { msgText } : {}), bigMsg, ...(inline ? { inline } : {}), ...(keep ? { keep } : {}) };
}

/**
 * The record of a change: where the message goes and what of it was written (see
 * journal.ts). A big `msg` entering que has its index line after it.
 */
export function record(id: string, to: JournalRecord['to'], opts: MoveOptions, p: Plan, fresh = false): string {
  const line = recordLine({
    id,
    to,
    ...(opts.msg ? { m: p.bigMsg ? null : opts.msg } : {}),
    ...(opts.status !== undefined ? { st: opts.status } : {}),
    ...(p.inline ? { a: p.inline } : {}),
    ...(fresh ? { n: 1 as const } : {}),
    ...(p.keep ? { d: 1 as const } : {}),
  });
  return p.bigMsg && opts.msg && to === 'que' ? line + journalLine(entryFromMessage(opts.msg, fresh)) : line;
}

