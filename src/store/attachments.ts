/**
 * A message's attachments as they lie in its `attach/` directory: which
 * files count, their md5, and the writes of `attach_message` and `delete_attach_message`.
 * One rule for every reader (get_message, clone, a worker's `dup`, the relay, the pull
 * model's payload and result): an attachment is a regular file whose name does not start
 * with `.` and does not end in `.tmp`. `attach_message` links the file in as `<name>.tmp`
 * and renames it, so a `.tmp` file is an attachment still being written, or one left by a
 * crash, never a finished one. An attachment is added or removed only in `prep`; the
 * directory fsync that makes it durable is the commit's (message-store.ts), which fsyncs
 * the `attach/` of a prep message with the move into que.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { RqError, asNoSpace, errnoCode } from '../domain/errors.js';
import type { State } from '../domain/states.js';
import { checkAttachmentSource } from './attachment-source.js';
import type { QueueLayout } from './layout.js';

/** The attachment names of the message in `msgDir` (in its `attach/`), sorted; none when it has no `attach/`. */
export function attachmentNames(msgDir: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(path.join(msgDir, 'attach'), { withFileTypes: true });
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return [];
    throw e;
  }
  return entries
    .filter((d) => d.isFile() && !d.name.startsWith('.') && !d.name.endsWith('.tmp'))
    .map((d) => d.name)
    .sort();
}

/** The md5 (hex) and the size of a file, in one streamed read. */
export async function hashFile(file: string): Promise<{ md5: string; size: number }> {
  const hash = crypto.createHash('md5');
  let size = 0;
  for await (const chunk of fs.createReadStream(file)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { md5: hash.digest('hex'), size };
}

/** Hard-link a file, or copy it when the link crosses filesystems (EXDEV). */
export function linkOrCopy(from: string, to: string): void {
  try {
    fs.linkSync(from, to);
  } catch (e) {
    if (errnoCode(e) !== 'EXDEV' && errnoCode(e) !== 'EPERM') throw e;
    fs.copyFileSync(from, to);
  }
}

/** The attachment operations of one queue's message store. */
export interface AttachmentStore {
  attachmentNames(state: State, id: string): string[];
  /** The md5 and size of an attachment. */
  hashAttachment(state: State, id: string, name: string): Promise<{ md5: string; size: number }>;
  /** An attachment's content, or undefined when the message has none of that name. */
  readAttachment(state: State, id: string, name: string): Buffer | undefined;
  /**
   * attach_message: link (or copy) the file `pathname` into the prep message `id` as
   * `name` (else the file's base name), with RQ's checks and texts (RQ_ATTACH); returns
   * its md5.
   */
  attach(id: string, pathname: unknown, name: unknown): Promise<string>;
  /** delete_attach_message: remove attachment `name` of the prep message `id`, with RQ's texts (RQ_ATTACH). */
  deleteAttachment(id: string, name: unknown): void;
}

export function createAttachmentStore(q: QueueLayout): AttachmentStore {
  const where = path.relative(q.root.root, q.dir);
  const file = (state: State, id: string, name: string): string => path.join(q.msgDir(state, id), 'attach', name);
  return {
    attachmentNames: (state, id) => attachmentNames(q.msgDir(state, id)),

    hashAttachment: (state, id, name) => hashFile(file(state, id, name)),

    readAttachment(state, id, name) {
      try {
        return fs.readFileSync(file(state, id, name));
      } catch (e) {
        if (errnoCode(e) === 'ENOENT') return undefined;
        throw e;
      }
    },

    async attach(id, pathname, name) {
      const dir = q.msgDir('prep', id);
      const fail = (text: string): RqError => new RqError('RQ_ATTACH', text);
      if (!fs.existsSync(dir)) throw fail('No message on disk');
      if (typeof pathname !== 'string' || !pathname.startsWith('/')) {
        throw fail(`Invalid pathname, must be normalized ${String(pathname)} (ie. must start with /`);
      }
      checkAttachmentSource(pathname);
      const attachDir = path.join(dir, 'attach');
      try {
        fs.mkdirSync(attachDir, { recursive: true });
      } catch (e) {
        throw asNoSpace(e, where);
      }
      const attName = typeof name === 'string' && name !== '' ? name : path.basename(pathname);
      if (attName.startsWith('.')) throw fail(`Attachment name as a dot-file not allowed: ${attName}`);
      if (/[$%&*<>?[\]|~/\\\0]/.test(attName) || attName === '..') {
        throw fail(`Attachment name has invalid character. not allowed: ${attName}`);
      }
      // It is linked in as `<name>.tmp` first, and no file name has more than 255 bytes.
      if (Buffer.byteLength(attName) > 251) throw fail(`Attachment name is ${Buffer.byteLength(attName)} bytes long; at most 251 are allowed`);
      const tmp = path.join(attachDir, `${attName}.tmp`);
      fs.rmSync(tmp, { force: true });
      try {
        linkOrCopy(pathname, tmp);
      } catch (e) {
        fs.rmSync(tmp, { force: true });
        throw asNoSpace(e, where);
      }
      const { md5 } = await hashFile(tmp);
      fs.renameSync(tmp, path.join(attachDir, attName));
      return md5;
    },

    deleteAttachment(id, name) {
      const dir = q.msgDir('prep', id);
      if (!fs.existsSync(dir)) throw new RqError('RQ_ATTACH', 'No message on disk');
      if (!fs.existsSync(path.join(dir, 'attach'))) throw new RqError('RQ_ATTACH', 'No attach directory for msg');
      const attName = typeof name === 'string' && name !== '' && !/[/\0]/.test(name) && !name.startsWith('.') ? name : undefined;
      if (attName === undefined || !fs.existsSync(path.join(dir, 'attach', attName))) {
        throw new RqError('RQ_ATTACH', 'No attachment with that named for msg');
      }
      fs.rmSync(path.join(dir, 'attach', attName));
    },
  };
}
