// The external id index (src/store/ext-ids.ts) on a real filesystem: a claim is the
// uniqueness check, the link count says whether the message is still there, and a stale
// entry (message gone, a claimer's isLive refusing it, or a symlink of the older index)
// is replaced by the next claim.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXT_ID_FILE, extIdIndex, markerContent } from '../../src/store/ext-ids.js';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-ext-ids-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** A message directory with its marker file; returns the marker's path. */
function message(id: string, extId: string): string {
  const dir = path.join(root, 'q', id);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, EXT_ID_FILE), markerContent('q', id, extId));
  return path.join(dir, EXT_ID_FILE);
}

describe('extIdIndex', () => {
  const held = (): boolean => true;

  it('claims once, finds the message from its id, and lets it go on release', () => {
    const index = extIdIndex(path.join(root, 'ids'));
    const a = message('a', 'job-1');
    expect(index.claim('job-1', a, held)).toBe(true);
    expect(index.claim('job-1', message('b', 'job-1'), held)).toBe(false);
    expect(index.lookup('job-1')).toEqual({ queue: 'q', id: 'a' });
    index.release('job-1', path.join(root, 'q', 'b', EXT_ID_FILE)); // not its entry: kept
    expect(index.lookup('job-1')).toEqual({ queue: 'q', id: 'a' });
    index.release('job-1', a);
    expect(index.lookup('job-1')).toBeUndefined();
  });

  it('follows the message across renames, and reads a deleted message as gone (its id free again)', () => {
    const index = extIdIndex(path.join(root, 'ids'));
    expect(index.claim('job-1', message('a', 'job-1'), held)).toBe(true);
    fs.renameSync(path.join(root, 'q', 'a'), path.join(root, 'q', 'moved'));
    expect(index.lookup('job-1')).toEqual({ queue: 'q', id: 'a' });
    fs.rmSync(path.join(root, 'q', 'moved'), { recursive: true });
    expect(index.lookup('job-1')).toBeUndefined();
    expect(index.claim('job-1', message('c', 'job-1'), held)).toBe(true);
    expect(index.lookup('job-1')).toEqual({ queue: 'q', id: 'c' });
  });

  it('replaces an entry the claimer says no longer holds the id, and a symlink of the older index', () => {
    const index = extIdIndex(path.join(root, 'ids'));
    expect(index.claim('job-1', message('a', 'job-1'), held)).toBe(true);
    expect(index.claim('job-1', message('b', 'job-1'), (h) => h.id !== 'a')).toBe(true);
    expect(index.lookup('job-1')).toEqual({ queue: 'q', id: 'b' });
    const legacy = path.join(root, 'ids', Buffer.from('job-2').toString('base64url'));
    fs.symlinkSync('20261121.1200.00.000.1', legacy);
    expect(index.lookup('job-2')).toBeUndefined();
    expect(index.claim('job-2', message('d', 'job-2'), held)).toBe(true);
    expect(index.lookup('job-2')).toEqual({ queue: 'q', id: 'd' });
  });

  it('names a long id by a hash, and tells it from another', () => {
    const index = extIdIndex(path.join(root, 'ids'));
    const long = 'x'.repeat(1000);
    expect(index.claim(long, message('a', long), held)).toBe(true);
    expect(index.lookup(long)).toEqual({ queue: 'q', id: 'a' });
    expect(index.lookup(`${long}y`)).toBeUndefined();
  });
});
