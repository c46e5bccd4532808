// The journal as start-up reads it (src/store/journal.ts): what replay knows of each
// message from its records, an undo going back to the record before it, the index of
// que kept from records and index lines, and the boot lines that tell a journal which
// may have lived through a power cut.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootLine, mayHavePowerCut, readJournal, recordLine, undoLine } from '../../src/store/journal.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-journal-'));
  file = path.join(dir, 'que.index');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const msg = (id: string, extra: Record<string, unknown> = {}) => ({ msg_id: id, dest: 'q', count: 0, max_count: 15, due: 1795778000, ...extra });
const thisBoot = (): string => fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();

describe('the journal read at start-up', () => {
  it('knows each message by its last record, with the newest msg, status and attachments', () => {
    fs.writeFileSync(
      file,
      [
        recordLine({ id: 'a', to: 'que', m: msg('a'), a: { report: 'aGk=' }, n: 1 }),
        recordLine({ id: 'a', to: 'run', m: msg('a', { count: 1 }) }),
        recordLine({ id: 'a', to: 'done', st: 'done - ok' }),
        recordLine({ id: 'b', to: 'que', m: msg('b'), n: 1 }),
      ].join(''),
    );
    const read = readJournal(file);
    expect(read.records.get('a')).toMatchObject({ to: 'done', m: { count: 1 }, st: { job_status: 'done - ok' }, a: { report: 'aGk=' } });
    expect([...read.entries.keys()]).toEqual(['b']);
    expect(read.entries.get('b')?.noStatus).toBe(true);
  });

  it('goes back to the record before an undone one, not to nothing', () => {
    fs.writeFileSync(file, [recordLine({ id: 'a', to: 'que', m: msg('a'), n: 1 }), recordLine({ id: 'a', to: 'done', st: 'x' }), undoLine('a')].join(''));
    expect(readJournal(file).records.get('a')).toMatchObject({ to: 'que', m: { msg_id: 'a' } });
    fs.writeFileSync(file, [recordLine({ id: 'b', to: 'que', m: msg('b') }), undoLine('b')].join(''));
    expect(readJournal(file).records.has('b')).toBe(false);
  });

  it('forgets the msg of a record whose msg was too big for it', () => {
    fs.writeFileSync(file, [recordLine({ id: 'a', to: 'que', m: msg('a') }), recordLine({ id: 'a', to: 'run', m: null, d: 1 })].join(''));
    const a = readJournal(file).records.get('a');
    expect(a?.m).toBeUndefined();
    expect(a?.inPlace).toBe(true);
  });

  it.skipIf(!fs.existsSync('/proc/sys/kernel/random/boot_id'))('may have lived through a power cut unless this boot alone wrote it', () => {
    fs.writeFileSync(file, bootLine(thisBoot()));
    expect(mayHavePowerCut(readJournal(file))).toBe(false);
    fs.appendFileSync(file, bootLine('another boot'));
    expect(mayHavePowerCut(readJournal(file))).toBe(true);
    fs.writeFileSync(file, recordLine({ id: 'a', to: 'que', m: msg('a') }));
    expect(mayHavePowerCut(readJournal(file))).toBe(true);
  });
});
