/**
 * The short preview of a pull message's payload (its `attach/payload`) on the pull queue
 * page: text as text, a JSON object or array pretty-printed, anything else (bytes that
 * are not UTF-8, or control characters) as a hex dump; each shortened, the page linking
 * to the whole. Only the first PREVIEW_READ bytes of a payload are read, so a page of
 * big payloads costs the same as a page of small ones.
 */
import fs from 'node:fs';

/** Bytes read of a payload; a JSON payload up to this size is pretty-printed. */
export const PREVIEW_READ = 16 * 1024;
/** A text preview shows at most this many characters... */
const SHOWN_CHARS = 600;
/** ...and this many lines. */
const SHOWN_LINES = 12;
/** A hex dump shows this many bytes, 16 a line. */
const HEX_BYTES = 64;

export interface PayloadPreview {
  /** none: no payload file (a message made by RQ's API, not a front door; or one that moved meanwhile). */
  kind: 'none' | 'empty' | 'text' | 'json' | 'binary';
  /** What the page shows (a pre block). */
  text: string;
  /** The whole payload's size in bytes. */
  size: number;
  /** The preview shows less than the whole payload. */
  shortened: boolean;
}

/** Control characters but tab, newline and carriage return: such text is shown as bytes. */
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/;

/** The first SHOWN_LINES lines of `text`, at most SHOWN_CHARS characters, and whether that is less than it. */
function cut(text: string): { text: string; cut: boolean } {
  const lines = text.split('\n');
  let shown = lines.slice(0, SHOWN_LINES).join('\n');
  if (shown.length > SHOWN_CHARS) shown = shown.slice(0, SHOWN_CHARS);
  return { text: shown, cut: shown.length < text.length };
}

/** `0000  68 65 6c 6c 6f 0a ...  |hello.|`: offset, the bytes, and the printable ones. */
export function hexDump(bytes: Buffer): string {
  const lines: string[] = [];
  for (let at = 0; at < bytes.length; at += 16) {
    const row = bytes.subarray(at, at + 16);
    const hex = [...row].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    const ascii = [...row].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${at.toString(16).padStart(4, '0')}  ${hex.padEnd(47)}  |${ascii}|`);
  }
  return lines.join('\n');
}

/** The preview of a payload of `size` bytes whose first bytes are `head` (all of it when size <= head.length). */
export function previewOf(head: Buffer, size: number): PayloadPreview {
  if (size === 0) return { kind: 'empty', text: '', size, shortened: false };
  const whole = head.length >= size;
  let text: string | undefined;
  try {
    // stream: a character cut by the end of the read is left out, not taken for bad bytes.
    text = new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: !whole });
  } catch {
    text = undefined;
  }
  if (text === undefined || CONTROL.test(text)) {
    return { kind: 'binary', text: hexDump(head.subarray(0, HEX_BYTES)), size, shortened: size > HEX_BYTES };
  }
  if (whole && /^\s*[[{]/.test(text)) {
    try {
      const pretty = cut(JSON.stringify(JSON.parse(text), null, 2));
      return { kind: 'json', text: pretty.text, size, shortened: pretty.cut };
    } catch {
      // not JSON: shown as text
    }
  }
  const shown = cut(text);
  return { kind: 'text', text: shown.text, size, shortened: shown.cut || !whole };
}

const NONE: PayloadPreview = { kind: 'none', text: '', size: 0, shortened: false };

/** The preview of the payload file `file`: its first PREVIEW_READ bytes read; `none` when it cannot be read (not there). */
export async function readPreview(file: string): Promise<PayloadPreview> {
  let fh: fs.promises.FileHandle;
  try {
    fh = await fs.promises.open(file, 'r');
  } catch {
    return NONE;
  }
  try {
    const { size } = await fh.stat();
    const head = Buffer.alloc(Math.min(size, PREVIEW_READ));
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    return previewOf(head.subarray(0, bytesRead), size);
  } catch {
    return NONE;
  } finally {
    await fh.close();
  }
}
