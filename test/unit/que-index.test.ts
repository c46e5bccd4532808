// The que index's entries and journal lines: a big param is kept as a digest, in memory
// and in the journal; small ones as they are; a journal written before keeps working.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/domain/message.js';
import { readJournal as readIndex } from '../../src/store/journal.js';
import { BigParam, MAX_INDEXED_PARAM_CHARS, entryFromMessage, journalLine } from '../../src/store/que-index.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-que-index-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const msg = (id: string, fields: Record<string, unknown>): Message => ({ msg_id: id, dest: 'q', count: 0, max_count: 15, due: 1795238778, ...fields });

describe('que index entries', () => {
  const big = 'b'.repeat(MAX_INDEXED_PARAM_CHARS);
  const bigObject = { list: Array.from({ length: 300 }, (_, i) => i) };

  it('keeps small params as they are and big ones as digests', () => {
    const escaped = '\u0001'.repeat(200); // 200 characters, 1,202 of JSON text
    const e = entryFromMessage(msg('1', { param1: 'small', param2: big, param3: bigObject, param4: escaped }));
    expect(e.params[0]).toBe('small');
    for (const p of e.params.slice(1)) expect(p).toBeInstanceOf(BigParam);
    expect(entryFromMessage(msg('2', { param2: 'b'.repeat(MAX_INDEXED_PARAM_CHARS - 2) })).params[1]).toBe('b'.repeat(MAX_INDEXED_PARAM_CHARS - 2));
    const same = entryFromMessage(msg('3', { param1: big, param2: big }));
    expect((same.params[0] as BigParam).digest).toBe((e.params[1] as BigParam).digest);
    expect((same.params[1] as BigParam).digest).toBe((e.params[1] as BigParam).digest);
    expect((entryFromMessage(msg('4', { param1: `${big}!` })).params[0] as BigParam).digest).not.toBe((e.params[1] as BigParam).digest);
  });

  it('writes journal lines without the big params and reads them back as they were', () => {
    const entries = [
      entryFromMessage(msg('1', { param1: 'small', param2: big, param3: bigObject })),
      entryFromMessage(msg('2', { param1: 'x', priority: 3, sort_key: 'k' })),
      entryFromMessage(msg('3', { param4: big, rank: 7 })),
    ];
    const text = entries.map(journalLine).join('');
    expect(text).not.toContain(big);
    expect(text.length).toBeLessThan(1000);
    const file = path.join(dir, 'que.index');
    fs.writeFileSync(file, text);
    const read = readIndex(file);
    expect(read.lines).toBe(3);
    expect([...read.entries.values()]).toEqual(entries);
  });

  it('reads a line written before, with a big param in it, as a digest', () => {
    const file = path.join(dir, 'que.index');
    fs.writeFileSync(file, `${JSON.stringify(['1', 1795238778, 'q', [big, null, null, null]])}\n${JSON.stringify(['2', 1795238778, 'q', { p: [] }])}\n`);
    const read = readIndex(file);
    expect([...read.entries.keys()]).toEqual(['1']);
    // An older line has no count, src or status flag: they are unknown.
    expect(read.entries.get('1')).toEqual({ ...entryFromMessage(msg('1', { param1: big })), count: undefined });
  });

  it('keeps count, src (a big one as a digest) and the no-status mark of a line', () => {
    const file = path.join(dir, 'que.index');
    const entries = [entryFromMessage(msg('1', { src: 'billing', count: 2 })), entryFromMessage(msg('2', { src: big }), true)];
    fs.writeFileSync(file, entries.map(journalLine).join(''));
    expect([...readIndex(file).entries.values()]).toEqual(entries);
    expect(entries[1]!.src).toBeInstanceOf(BigParam);
    expect(entries[1]!.noStatus).toBe(true);
  });
});
