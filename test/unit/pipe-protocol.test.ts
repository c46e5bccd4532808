// The worker → rq line protocol on fd 3 (docs/scripts.md, "The pipe protocol"): how a line splits into
// command and status text, which lines are completion reports, and how the byte
// stream becomes lines.
import { describe, expect, it } from 'vitest';
import {
  MAX_LINE,
  createLineSplitter,
  isCompletion,
  parseLine,
  splitLine,
  type WorkerReport,
} from '../../src/spawn/pipe-protocol.js';

describe('splitLine (Ruby awk split into two fields)', () => {
  it.each<[string, string, string | null]>([
    ['done', 'done', null],
    ['done ', 'done', ''],
    ['done   ', 'done', ''],
    ['done\t', 'done', ''],
    ['done all good', 'done', 'all good'],
    ['run  two  words', 'run', 'two  words'],
    ['run two words  ', 'run', 'two words  '],
    ['   run x', 'run', 'x'],
    ['\t run\t x y', 'run', 'x y'],
    ['run\r', 'run', ''],
    ['', '', null],
    ['   ', '', null],
  ])('%j → cmd %j, text %j', (line, cmd, text) => {
    expect(splitLine(line)).toEqual({ cmd, text });
  });

  it('splits only on ASCII whitespace, as Ruby does', () => {
    expect(splitLine('done\u00a0ok')).toEqual({ cmd: 'done\u00a0ok', text: null });
    expect(parseLine('done\u00a0ok').kind).toBe('progress');
    expect(splitLine('run caf\u00e9 \u00a0x')).toEqual({ cmd: 'run', text: 'caf\u00e9 \u00a0x' });
  });
});

describe('parseLine', () => {
  it.each<[string, WorkerReport]>([
    ['run processed 3 of 10', { kind: 'progress', text: 'processed 3 of 10' }],
    ['run', { kind: 'progress', text: null }],
    ['done', { kind: 'done', text: null }],
    ['done all good', { kind: 'done', text: 'all good' }],
    ['err by design', { kind: 'err', text: 'by design' }],
    ['fails badly', { kind: 'err', text: 'badly' }],
    ['relayed http://h:1/q/test/20261121.0527.42.578.1', { kind: 'relayed', text: 'http://h:1/q/test/20261121.0527.42.578.1' }],
    ['resend 2', { kind: 'resend', text: '2', delaySec: 2 }],
    ['resend 300-memcache down', { kind: 'resend', text: '300-memcache down', delaySec: 300 }],
    ['resend', { kind: 'resend', text: null, delaySec: 0 }],
    ['resend soon', { kind: 'resend', text: 'soon', delaySec: 0 }],
    ['resend 5x-y-z', { kind: 'resend', text: '5x-y-z', delaySec: 5 }],
  ])('%j', (line, report) => {
    expect(parseLine(line)).toEqual(report);
  });

  it('treats "fail" as progress, not a completion', () => {
    const r = parseLine('fail cannot reach host');
    expect(r).toEqual({ kind: 'progress', text: 'cannot reach host' });
    expect(isCompletion(r)).toBe(false);
  });

  it.each([['DONE'], ['Done ok'], ['done:'], ['error x'], ['err2'], ['hello world'], ['']])(
    'treats the unknown line %j as progress',
    (line) => {
      expect(parseLine(line).kind).toBe('progress');
    },
  );

  it('keeps the whole text for the status, even for completions', () => {
    expect(parseLine('  done   done  sleeping ').text).toBe('done  sleeping ');
  });

  describe('dup', () => {
    it('splits delay, flag and a queue destination', () => {
      expect(parseLine('dup 0-X-test_nop')).toEqual({
        kind: 'dup',
        text: '0-X-test_nop',
        delaySec: 0,
        flag: 'X',
        destination: 'test_nop',
      });
    });

    it('keeps dashes inside the destination', () => {
      expect(parseLine('dup 0-X-http://host:3333/q/a-b')).toMatchObject({
        kind: 'dup',
        delaySec: 0,
        flag: 'X',
        destination: 'http://host:3333/q/a-b',
      });
      expect(parseLine('dup 30-Y-my-queue-name')).toMatchObject({ delaySec: 30, flag: 'Y', destination: 'my-queue-name' });
    });

    it('reads the delay with Ruby to_i', () => {
      expect(parseLine('dup 12s-X-q')).toMatchObject({ delaySec: 12, destination: 'q' });
      expect(parseLine('dup x-X-q')).toMatchObject({ delaySec: 0, destination: 'q' });
    });

    it('gives an empty destination when the text is short', () => {
      expect(parseLine('dup 0-X')).toMatchObject({ kind: 'dup', destination: '' });
      expect(parseLine('dup')).toMatchObject({ kind: 'dup', text: null, delaySec: 0, flag: '', destination: '' });
    });

    it('is not a completion', () => {
      expect(isCompletion(parseLine('dup 0-X-q'))).toBe(false);
    });
  });
});

describe('isCompletion', () => {
  it.each([
    ['done', true],
    ['err x', true],
    ['fails x', true],
    ['relayed x', true],
    ['resend 1', true],
    ['run x', false],
    ['fail x', false],
    ['dup 0-X-q', false],
    ['whatever', false],
  ])('%j → %s', (line, expected) => {
    expect(isCompletion(parseLine(line))).toBe(expected);
  });
});

describe('createLineSplitter', () => {
  function collect(): { lines: string[]; push(s: string | Buffer): void; end(): void } {
    const lines: string[] = [];
    const s = createLineSplitter((l) => lines.push(l));
    return { lines, push: (c) => s.push(typeof c === 'string' ? Buffer.from(c) : c), end: () => s.end() };
  }

  it('splits a chunk on LF', () => {
    const c = collect();
    c.push('run a\nrun b\ndone\n');
    expect(c.lines).toEqual(['run a', 'run b', 'done']);
  });

  it('carries a partial line over to the next chunk', () => {
    const c = collect();
    c.push('run fir');
    expect(c.lines).toEqual([]);
    c.push('st\ndo');
    expect(c.lines).toEqual(['run first']);
    c.push('ne ok\n');
    expect(c.lines).toEqual(['run first', 'done ok']);
  });

  it('delivers the last line without LF at end(), once', () => {
    const c = collect();
    c.push('run a\ndone no newline');
    expect(c.lines).toEqual(['run a']);
    c.end();
    expect(c.lines).toEqual(['run a', 'done no newline']);
    c.end();
    expect(c.lines).toEqual(['run a', 'done no newline']);
  });

  it('delivers nothing extra at end() after a complete line', () => {
    const c = collect();
    c.push('done\n');
    c.end();
    expect(c.lines).toEqual(['done']);
  });

  it('cuts a line longer than MAX_LINE to its start, over many chunks, and keeps the next line whole', () => {
    const c = collect();
    c.push(`done ${'x'.repeat(MAX_LINE)}`);
    for (let i = 0; i < 20; i++) c.push('y'.repeat(100_000));
    c.push('z\nrun next\n');
    expect(c.lines).toEqual([`done ${'x'.repeat(MAX_LINE - 5)}`, 'run next']);
  });

  it('cuts a long last line without LF at end() too', () => {
    const c = collect();
    c.push(`err ${'x'.repeat(3 * MAX_LINE)}`);
    c.end();
    expect(c.lines).toEqual([`err ${'x'.repeat(MAX_LINE - 4)}`]);
  });

  it('never cuts a line between the two halves of a character outside the BMP', () => {
    const c = collect();
    c.push(`${'x'.repeat(MAX_LINE - 1)}${'😀'.repeat(10)}\n`);
    c.push(`${'x'.repeat(MAX_LINE - 2)}${'😀'.repeat(10)}\n`);
    expect(c.lines).toEqual(['x'.repeat(MAX_LINE - 1), `${'x'.repeat(MAX_LINE - 2)}😀`]);
  });

  it('keeps empty lines, which write a null status', () => {
    const c = collect();
    c.push('\n\nrun x\n');
    expect(c.lines).toEqual(['', '', 'run x']);
  });

  it('keeps a multi-byte character split across chunks', () => {
    const bytes = Buffer.from('run café ☃ done\n', 'utf8');
    const c = collect();
    // Split inside both 'é' (2 bytes) and '☃' (3 bytes).
    const cut1 = bytes.indexOf(Buffer.from('é')) + 1;
    const cut2 = bytes.indexOf(Buffer.from('☃')) + 2;
    c.push(bytes.subarray(0, cut1));
    c.push(bytes.subarray(cut1, cut2));
    c.push(bytes.subarray(cut2));
    expect(c.lines).toEqual(['run café ☃ done']);
  });

  it('gives the same lines however the stream is cut', () => {
    const text = 'run 1\nrun two  words\n\ndup 0-X-q\nresend 300-memcache down\ndone é\n';
    const bytes = Buffer.from(text);
    for (let size = 1; size <= 7; size++) {
      const c = collect();
      for (let i = 0; i < bytes.length; i += size) c.push(bytes.subarray(i, i + size));
      c.end();
      expect(c.lines).toEqual(text.split('\n').slice(0, -1));
    }
  });
});
