/**
 * The names and marker files of the external-id indexes (store/ext-ids.ts owns the
 * indexes): an index entry is a hard link, named after the external id, to the marker
 * file `<message dir>/ext_id`, which names the message's queue and short id. Here: the
 * entry's name, the marker's content, and the test that an entry may name a live message.
 * No filesystem access, so a front door that only looks an id up needs nothing of the store.
 */
import { createHash } from 'node:crypto';
import { isPlainObject } from './message.js';

/** The file in a message's directory that index entries link to. */
export const EXT_ID_FILE = 'ext_id';
/** The longest encoded name kept as it is (file names may have 255 bytes). */
const MAX_PLAIN = 200;

/** What a marker file names. */
export interface ExtIdTarget {
  queue: string;
  id: string;
}

export interface ExtIdMarker extends ExtIdTarget {
  ext_id: string;
}

/** The index entry's file name of `extId`: base64url when it fits in a file name, else `~` and a hash. */
export function extIdLinkName(extId: string): string {
  const plain = Buffer.from(extId, 'utf8').toString('base64url');
  return plain.length <= MAX_PLAIN ? plain : `~${createHash('sha256').update(extId).digest('base64url')}`;
}

/** The content of a message's marker file. */
export function markerContent(queue: string, id: string, extId: string): Buffer {
  return Buffer.from(JSON.stringify({ queue, id, ext_id: extId } satisfies ExtIdMarker));
}

/** A marker file's content as its fields; undefined when it is not one. */
export function parseMarker(text: string): ExtIdMarker | undefined {
  try {
    const m: unknown = JSON.parse(text);
    if (!isPlainObject(m)) return undefined;
    const { queue, id, ext_id: extId } = m;
    return typeof queue === 'string' && typeof id === 'string' && typeof extId === 'string' ? { queue, id, ext_id: extId } : undefined;
  } catch {
    return undefined;
  }
}

/** An entry that may name a live message: a file with another name (its marker); a message directory deleted leaves it alone (`nlink` 1). */
export function isLinkedEntry<T extends { isFile(): boolean; nlink: number }>(st: T | undefined): st is T {
  return st !== undefined && st.isFile() && st.nlink >= 2;
}
