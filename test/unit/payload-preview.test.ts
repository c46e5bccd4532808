/**
 * The pull queue page's payload previews (web/payload-preview.ts): what kind a payload is
 * taken for from its first bytes, and how a long one is shortened.
 */
import { describe, expect, it } from 'vitest';
import { PREVIEW_READ, hexDump, previewOf } from '../../src/web/payload-preview.js';

/** The preview of a whole payload, read as the page reads it (its first PREVIEW_READ bytes). */
const preview = (payload: Buffer | string): ReturnType<typeof previewOf> => {
  const bytes = Buffer.from(payload);
  return previewOf(bytes.subarray(0, PREVIEW_READ), bytes.length);
};

describe('payload previews', () => {
  it('pretty-prints a JSON object or array, and shows other JSON values and text as they are', () => {
    expect(preview('{"a":1,"b":[true]}')).toEqual({ kind: 'json', text: '{\n  "a": 1,\n  "b": [\n    true\n  ]\n}', size: 18, shortened: false });
    expect(preview('42')).toMatchObject({ kind: 'text', text: '42' });
    expect(preview('{not json')).toMatchObject({ kind: 'text', text: '{not json', shortened: false });
    expect(preview('')).toEqual({ kind: 'empty', text: '', size: 0, shortened: false });
  });

  it('cuts text at 12 lines or 600 characters, and says so', () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n');
    expect(preview(lines)).toMatchObject({ kind: 'text', text: lines.split('\n').slice(0, 12).join('\n'), shortened: true });
    expect(preview('x'.repeat(1000))).toMatchObject({ kind: 'text', text: 'x'.repeat(600), shortened: true });
  });

  it('shows a payload bigger than the read as text, shortened, even when a character is cut by the read', () => {
    const big = 'é'.repeat(PREVIEW_READ);
    // The read ends inside a two-byte character: still text, not bytes.
    const head = Buffer.from(big).subarray(0, PREVIEW_READ - 1);
    expect(previewOf(head, Buffer.byteLength(big))).toMatchObject({ kind: 'text', text: 'é'.repeat(600), shortened: true });
    // JSON too big to read whole is not parsed: it is shown as text.
    const json = JSON.stringify({ items: 'y'.repeat(PREVIEW_READ) });
    expect(preview(json)).toMatchObject({ kind: 'text', shortened: true });
  });

  it('shows bytes that are not UTF-8, or control characters, as a hex dump of the first 64 bytes', () => {
    expect(preview(Buffer.from([0xff, 0x41]))).toEqual({ kind: 'binary', text: `0000  ${'ff 41'.padEnd(47)}  |.A|`, size: 2, shortened: false });
    expect(preview('a\x00b')).toMatchObject({ kind: 'binary' });
    expect(preview('tab\there\r\nnext line')).toMatchObject({ kind: 'text' });
    const long = preview(Buffer.alloc(100, 0x01));
    expect(long).toMatchObject({ kind: 'binary', shortened: true });
    expect(long.text.split('\n')).toHaveLength(4);
    expect(hexDump(Buffer.from('0123456789abcdefXY'))).toBe(`0000  ${'30 31 32 33 34 35 36 37 38 39 61 62 63 64 65 66'}  |0123456789abcdef|\n0010  ${'58 59'.padEnd(47)}  |XY|`);
  });
});
