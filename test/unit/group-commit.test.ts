// The group committer (src/store/group-commit.ts): ops append their journal lines in
// order, and a replacement of the file (the que index compaction) runs only between two
// flushes, after the ops before it have resolved, so no flushed line is lost with the
// old file and no fsync is left pending on a closed descriptor. A directory removed and
// made again (the cleaner prunes done/ minute directories) is fsynced as the new one.
// A flush that a full disk refuses leaves the journal as it was.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { createGroupCommitter, type GroupCommitter } from '../../src/store/group-commit.js';
import { smallDisk } from '../helpers/full-disk.js';

let dir: string;
let file: string;
let c: GroupCommitter;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-commit-'));
  file = path.join(dir, 'journal');
  fs.writeFileSync(file, 'old\n');
  c = createGroupCommitter();
  c.openJournal(file, 1);
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('group commit journal', () => {
  it('appends the lines of every op and counts them', async () => {
    await Promise.all([c.commit({ journal: 'a\n' }), c.commit({ journal: 'b\nc\n' }), c.commit({})]);
    expect(fs.readFileSync(file, 'utf8')).toBe('old\na\nb\nc\n');
    expect(c.journalLines()).toBe(4);
  });

  it('replaces the file only after the flush in flight, and its ops, are done', async () => {
    const order: string[] = [];
    const a = c.commit({ journal: 'a\n' }).then(() => order.push('a committed'));
    await nextTurn(); // a's flush has started: its fdatasync is pending
    const replaced = c.replaceJournal(file, () => {
      order.push(`write sees ${JSON.stringify(fs.readFileSync(file, 'utf8'))}`);
      fs.writeFileSync(`${file}.new`, 'compact\n');
      fs.renameSync(`${file}.new`, file);
      return 1;
    });
    const b = c.commit({ journal: 'b\n' }).then(() => order.push('b committed'));
    await Promise.all([a, replaced, b]);
    expect(order).toEqual(['a committed', 'write sees "old\\na\\n"', 'b committed']);
    // b went to the new file; nothing was appended to the one replaced.
    expect(fs.readFileSync(file, 'utf8')).toBe('compact\nb\n');
    expect(c.journalLines()).toBe(2);
  });

  it('flushes the ops queued before a replacement first, and those after it into the new file', async () => {
    const before = c.commit({ journal: 'x\n' });
    const replaced = c.replaceJournal(file, () => {
      expect(fs.readFileSync(file, 'utf8')).toBe('old\nx\n');
      fs.writeFileSync(`${file}.new`, '');
      fs.renameSync(`${file}.new`, file);
      return 0;
    });
    const after = c.commit({ journal: 'y\n' });
    await Promise.all([before, replaced, after]);
    expect(fs.readFileSync(file, 'utf8')).toBe('y\n');
    expect(c.journalLines()).toBe(1);
  });

  it('rejects a failed replacement and keeps appending to the file at the path', async () => {
    await expect(
      c.replaceJournal(file, () => {
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    await c.commit({ journal: 'z\n' });
    expect(fs.readFileSync(file, 'utf8')).toBe('old\nz\n');
    expect(c.journalLines()).toBe(2);
  });

  it.skipIf(!fs.existsSync('/proc/self/fd'))('fsyncs a directory made again after its removal, not the deleted one', async () => {
    const sub = path.join(dir, 'minute');
    fs.mkdirSync(sub);
    await c.commit({ syncDirs: [sub] });
    fs.rmdirSync(sub);
    fs.mkdirSync(sub);
    await c.commit({ syncDirs: [sub] });
    const open = fs.readdirSync('/proc/self/fd').map((fd) => {
      try {
        return fs.readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        return '';
      }
    });
    expect(open).not.toContain(`${sub} (deleted)`);
    expect(open).toContain(sub);
  });

  it('leaves the journal as it was when a full disk refuses a flush, not a line cut short', async () => {
    const mount = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-commit-disk-'));
    onTestFinished(() => fs.rmSync(mount, { recursive: true, force: true }));
    const disk = smallDisk(mount, 64 * 1024);
    const journal = path.join(mount, 'journal');
    fs.writeFileSync(journal, 'old\n');
    c.openJournal(journal, 1);
    disk.fill();
    // Longer than what is left of the journal's last page: the write is cut short, then refused.
    const long = `${'x'.repeat(8192)}\n`;
    await expect(c.commit({ journal: long })).rejects.toMatchObject({ code: 'ENOSPC' });
    expect(fs.readFileSync(journal, 'utf8')).toBe('old\n');
    expect(c.journalLines()).toBe(1);
    disk.free();
    await c.commit({ journal: 'z\n' });
    expect(fs.readFileSync(journal, 'utf8')).toBe('old\nz\n');
    expect(c.journalLines()).toBe(2);
  });
});
