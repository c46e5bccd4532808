// The sorted id set behind the err listing (the `messages` command: names sorted descending),
// checked against a plain sort of the same ids after random adds and deletes.
import { describe, expect, it } from 'vitest';
import { SortedIds, lowerBound } from '../../src/queue/sorted-ids.js';

describe('SortedIds', () => {
  it('pages descending, skipping an offset', () => {
    const s = new SortedIds();
    for (const id of ['b', 'd', 'a', 'c']) s.add(id);
    expect(s.descending(0, Infinity)).toEqual(['d', 'c', 'b', 'a']);
    expect(s.descending(1, 2)).toEqual(['c', 'b']);
    expect(s.descending(3, 5)).toEqual(['a']);
    expect(s.descending(4, 5)).toEqual([]);
    expect(s.descending(0, 0)).toEqual([]);
  });

  it('ignores a repeated add, and deletes only what it has', () => {
    const s = new SortedIds();
    s.add('x');
    s.add('x');
    expect(s.size).toBe(1);
    expect(s.delete('y')).toBe(false);
    expect(s.delete('x')).toBe(true);
    expect(s.size).toBe(0);
  });

  it('bulk-loads with duplicates merged into what is there', () => {
    const s = new SortedIds();
    s.add('m');
    s.addAll(['z', 'a', 'm', 'a']);
    expect(s.descending(0, Infinity)).toEqual(['z', 'm', 'a']);
  });

  it('stays sorted like a plain sort through random adds and deletes', () => {
    const s = new SortedIds();
    const ref = new Set<string>();
    let seed = 7;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 2000; i++) {
      const id = `20261121.0527.${String(next() % 60).padStart(2, '0')}.${next() % 1000}.${next() % 50}`;
      if (next() % 3 === 0) expect(s.delete(id)).toBe(ref.delete(id));
      else {
        s.add(id);
        ref.add(id);
      }
    }
    expect(s.size).toBe(ref.size);
    expect(s.descending(0, Infinity)).toEqual([...ref].sort().reverse());
  });
});

describe('lowerBound', () => {
  it('finds the first item not before the sought one, from a start index', () => {
    const items = [1, 3, 3, 5, 8];
    const at = (n: number, from = 0): number => lowerBound(items, from, (x) => x < n);
    expect([0, 1, 2, 3, 4, 5, 8, 9].map((n) => at(n))).toEqual([0, 0, 1, 1, 3, 3, 4, 5]);
    expect(at(1, 2)).toBe(2);
    expect(at(9, 5)).toBe(5);
    expect(lowerBound([], 0, () => true)).toBe(0);
  });
});
