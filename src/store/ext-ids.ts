/**
 * A pull queue's index of external ids (lmstfy job ids, RQMS item ids): `ids/<name>`, a
 * symlink whose target is the message's short id, so a message is found from its
 * external id in one `readlink`, in any state.
 *
 * The name is the id in base64url when that fits in a file name, else `~` and a hash
 * of the id (the message's `ext_id` then confirms a lookup). Creating the link is the
 * uniqueness check: `symlink` fails with EEXIST when the id is taken. The link is made
 * before the message's commit and fsynced with it (the caller adds `idsDir` to the
 * commit's directories); a crash between the two leaves a link to a message that does
 * not exist, which every reader treats as absent and a new claim replaces.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { errnoCode } from '../domain/errors.js';
import type { QueueLayout } from './layout.js';

/** The longest encoded name kept as it is (file names may have 255 bytes). */
const MAX_PLAIN = 200;

function linkName(extId: string): string {
  const plain = Buffer.from(extId, 'utf8').toString('base64url');
  return plain.length <= MAX_PLAIN ? plain : `~${createHash('sha256').update(extId).digest('base64url')}`;
}

export interface ExtIds {
  /** The short id the link names, or undefined (no link). The caller checks the message is there. */
  lookup(extId: string): string | undefined;
  /**
   * Link `extId` to `shortId`. False when it is linked to a message `isLive` says is
   * there; a link to a message that is gone is replaced.
   */
  claim(extId: string, shortId: string, isLive: (shortId: string) => boolean): boolean;
  /** Remove the link if it still names `shortId`. */
  release(extId: string, shortId: string): void;
}

export function extIds(q: QueueLayout): ExtIds {
  const file = (extId: string): string => path.join(q.idsDir, linkName(extId));
  const lookup = (extId: string): string | undefined => {
    try {
      return fs.readlinkSync(file(extId));
    } catch (e) {
      if (errnoCode(e) === 'ENOENT') return undefined;
      throw e;
    }
  };
  return {
    lookup,
    claim(extId, shortId, isLive) {
      const f = file(extId);
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          fs.symlinkSync(shortId, f);
          return true;
        } catch (e) {
          if (errnoCode(e) === 'ENOENT') {
            fs.mkdirSync(q.idsDir, { recursive: true });
            continue;
          }
          if (errnoCode(e) !== 'EEXIST') throw e;
        }
        const old = lookup(extId);
        if (old !== undefined && isLive(old)) return false;
        fs.rmSync(f, { force: true });
      }
      return false;
    },
    release(extId, shortId) {
      if (lookup(extId) === shortId) fs.rmSync(file(extId), { force: true });
    },
  };
}
