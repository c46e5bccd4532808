/**
 * RQ was written in Ruby, and its numbers are parsed with Ruby's lenient `to_i` and
 * `to_f`: an optional sign and leading digits, the rest ignored, 0 when there are no
 * digits. Messages and configs keep relying on that. As in Ruby, an
 * underscore counts only between two digits (`"1_000"` is 1000; `"_5"` is 0 and
 * `"1__2"` is 1).
 */

/** Digits with single underscores between them, as Ruby reads a number's digits. */
const DIGITS = String.raw`\d+(?:_\d+)*`;
const INT_RE = new RegExp(String.raw`^\s*([+-]?${DIGITS})`);
const FLOAT_RE = new RegExp(String.raw`^\s*([+-]?(?:${DIGITS}(?:\.${DIGITS})?|\.${DIGITS})(?:[eE][+-]?${DIGITS})?)`);

export function rubyToI(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? Math.trunc(value) : 0;
  if (typeof value !== 'string') return 0;
  const m = INT_RE.exec(value)?.[1];
  return m === undefined ? 0 : Number.parseInt(m.replaceAll('_', ''), 10);
}

export function rubyToF(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : 0;
  if (typeof value !== 'string') return 0;
  const m = FLOAT_RE.exec(value)?.[1];
  return m === undefined ? 0 : Number.parseFloat(m.replaceAll('_', ''));
}
