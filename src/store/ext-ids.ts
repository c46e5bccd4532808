/**
 * Indexes of external ids (lmstfy job ids, RQMS item ids, Workq job ids): find a message
 * from its external id in one `stat` and `read`, in any state, and make the id unique
 * without a lock, even across queue processes.
 *
 * A message with an external id holds a small file, `<message dir>/ext_id`, naming its
 * queue and short id. The index entry is a *hard link* to that file, named after the
 * external id (base64url when it fits in a file name, else `~` and a hash; the file's
 * content confirms a lookup). So:
 * - creating the link is the uniqueness check: `link` fails with EEXIST when the id is
 *   taken, in this process or another;
 * - the link count says whether the message still exists: renames between states keep
 *   the inode, and once the message directory is deleted (by rq, an operator or the
 *   cleaner) the entry is the file's only name (`nlink` 1) and is stale. A stale entry
 *   reads as absent and a new claim replaces it. So does an entry whose message the
 *   claimer's `isLive` rejects (a queue-scope id of a done message, or a message of a
 *   deleted queue), and a symlink (the index of rq before this one).
 *
 * Two scopes use it: a pull queue's own `queues/<q>/ids/` (unique in the queue) and the
 * server's `queues/.ids/` (unique across every queue: Workq). The link is made before
 * the message's commit and fsynced with it (the caller syncs the index directory); a
 * crash before the commit leaves a half-made message in `prep/_*`, removed at start-up,
 * after which the entry is stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError, errnoCode } from '../domain/errors.js';
import { extIdLinkName, isLinkedEntry, parseMarker, type ExtIdMarker, type ExtIdTarget } from '../domain/ext-id-names.js';
import { lstatOrUndefinedSync } from './if-present.js';

export { EXT_ID_FILE, markerContent, type ExtIdTarget } from '../domain/ext-id-names.js';

function readMarker(file: string): ExtIdMarker | undefined {
  try {
    return parseMarker(fs.readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

let seq = 0;

export interface ExtIdIndex {
  /** The message holding `extId`, while it exists; undefined when none (or the entry is stale). */
  lookup(extId: string): ExtIdTarget | undefined;
  /**
   * Link `extId` to the marker file `marker`. False when a message that exists holds it
   * and `isLive` says it still holds it (true for server scope: held until removal).
   */
  claim(extId: string, marker: string, isLive: (held: ExtIdTarget) => boolean): boolean;
  /** Remove the entry if it is `marker`'s (the message lets its id go; `marker` may be in the trash by now). */
  release(extId: string, marker: string): void;
  /** The index directory, to fsync with a commit that claimed. */
  readonly dir: string;
}

export function extIdIndex(dir: string): ExtIdIndex {
  const file = (extId: string): string => path.join(dir, extIdLinkName(extId));
  /** A stale entry out of the way; false when it turned out not to be stale (someone claimed meanwhile). */
  const clearStale = (f: string, stale: fs.Stats): boolean => {
    const aside = `${f}.${process.pid}.${seq++}.stale`;
    try {
      fs.renameSync(f, aside);
    } catch (e) {
      if (errnoCode(e) === 'ENOENT') return true;
      throw e;
    }
    const took = fs.lstatSync(aside);
    if (took.ino !== stale.ino) {
      // Another claim replaced the stale entry between our stat and rename: put its entry back.
      try {
        fs.linkSync(aside, f);
      } catch (e) {
        if (errnoCode(e) !== 'EEXIST') throw e;
      }
      fs.rmSync(aside, { force: true });
      return false;
    }
    fs.rmSync(aside, { force: true });
    return true;
  };
  return {
    dir,
    lookup(extId) {
      const f = file(extId);
      if (!isLinkedEntry(lstatOrUndefinedSync(f))) return undefined;
      const m = readMarker(f);
      return m !== undefined && m.ext_id === extId ? { queue: m.queue, id: m.id } : undefined;
    },
    claim(extId, marker, isLive) {
      const f = file(extId);
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          fs.linkSync(marker, f);
          return true;
        } catch (e) {
          const code = errnoCode(e);
          if (code === 'ENOENT' && fs.existsSync(marker)) {
            fs.mkdirSync(dir, { recursive: true });
            continue;
          }
          if (code === 'EXDEV') throw new RqError('RQ_IO', `external ids need the queue on the same filesystem as ${dir}`, { cause: e });
          if (code !== 'EEXIST') throw e;
        }
        const st = lstatOrUndefinedSync(f);
        if (st === undefined) continue;
        const m = isLinkedEntry(st) ? readMarker(f) : undefined;
        if (isLinkedEntry(st) && (m === undefined || m.ext_id !== extId || isLive(m))) return false;
        if (!clearStale(f, st)) return false;
      }
      return false;
    },
    release(extId, marker) {
      const f = file(extId);
      const entry = lstatOrUndefinedSync(f);
      const mine = lstatOrUndefinedSync(marker);
      if (entry !== undefined && mine !== undefined && entry.ino === mine.ino && entry.dev === mine.dev) fs.rmSync(f, { force: true });
    },
  };
}
