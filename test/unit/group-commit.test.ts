// The group committer (src/store/group-commit.ts): ops append their journal records in
// order, synced before their renames; a checkpoint's cut of the file runs only between two
// flushes, after the ops before it have resolved, and keeps what was appended after its
// mark, so no flushed line is lost with the old file and no fsync is left pending on a
// closed descriptor. A directory removed and
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

  it('cuts the journal at a checkpoint only after the flush in flight, and its ops, are done, keeping what came after the mark', async () => {
    const order: string[] = [];
    const a = c.commit({ journal: 'a\n' }).then(() => order.push('a committed'));
    await nextTurn(); // a's flush has started: its fdatasync is pending
    let release!: () => void;
    const synced = new Promise<void>((r) => (release = r));
    const cut = c.checkpoint(
      file,
      async () => {
        order.push('sync');
        await synced;
      },
      (tail) => {
        order.push(`cut sees ${JSON.stringify(fs.readFileSync(file, 'utf8'))}, tail ${JSON.stringify(tail)}`);
        fs.writeFileSync(`${file}.new`, `compact\n${tail}`);
        fs.renameSync(`${file}.new`, file);
        return 1 + tail.split('\n').length - 1;
      },
    );
    // Committed while the sync runs: after the mark, so in the tail.
    await a;
    const b = c.commit({ journal: 'b\n' }).then(() => order.push('b committed'));
    await b;
    release();
    await cut;
    await c.commit({ journal: 'c\n' });
    expect(order).toEqual(['a committed', 'sync', 'b committed', 'cut sees "old\\na\\nb\\n", tail "b\\n"']);
    expect(fs.readFileSync(file, 'utf8')).toBe('compact\nb\nc\n');
    expect(c.journalLines()).toBe(3);
    expect(c.appended().lines).toBe(1);
  });

  it('keeps the journal as it was when the checkpoint\'s sync fails', async () => {
    await c.commit({ journal: 'x\n' });
    await expect(
      c.checkpoint(
        file,
        () => Promise.reject(new Error('sync failed')),
        () => {
          throw new Error('not cut');
        },
      ),
    ).rejects.toThrow('sync failed');
    await c.commit({ journal: 'z\n' });
    expect(fs.readFileSync(file, 'utf8')).toBe('old\nx\nz\n');
    expect(c.journalLines()).toBe(3);
  });

  it('syncs the records before the renames, and appends the undo of a rename that fails', async () => {
    const from = path.join(dir, 'from');
    fs.mkdirSync(from);
    const seen: string[] = [];
    const ok = c.commit({ journal: 'move\n', renames: [[from, path.join(dir, 'to')]], undo: 'undo-move\n' });
    const bad = c.commit({ journal: 'gone\n', renames: [[path.join(dir, 'missing'), path.join(dir, 'x')]], undo: 'undo-gone\n' });
    await ok.then(() => seen.push(fs.readFileSync(file, 'utf8')));
    await expect(bad).rejects.toMatchObject({ code: 'ENOENT' });
    expect(seen).toEqual(['old\nmove\ngone\nundo-gone\n']);
    expect(fs.existsSync(path.join(dir, 'to'))).toBe(true);
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
