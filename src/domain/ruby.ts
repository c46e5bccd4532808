/**
 * RQ was written in Ruby, and its numbers are parsed with Ruby's lenient `to_i` and
 * `to_f`: an optional sign and leading digits, the rest ignored, 0 when there are no
 * digits (spec/rq.md §0). Messages and configs keep relying on that.
 */
export function rubyToI(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? Math.trunc(value) : 0;
  if (typeof value !== 'string') return 0;
  const m = /^\s*([+-]?\d+)/.exec(value.replaceAll('_', ''));
  return m?.[1] === undefined ? 0 : Number.parseInt(m[1], 10);
}

export function rubyToF(value: unknown): number {
  if (typeof value === 'number') return Number.isFinite(value) ? value : 0;
  if (typeof value !== 'string') return 0;
  const m = /^\s*([+-]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?)/.exec(value.replaceAll('_', ''));
  return m?.[1] === undefined ? 0 : Number.parseFloat(m[1]);
}
