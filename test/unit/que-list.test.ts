// The in-memory que: always ordered by due time then id, so the
// head is the next message to run, and indexed by coalescing key.
import { describe, expect, it } from 'vitest';
import { QueList, paramKey } from '../../src/queue/que-list.js';
import { BigParam, type QueEntry } from '../../src/store/que-index.js';

function entry(id: string, dueMs: number, params: unknown[] = [null, null, null, null]): QueEntry {
  return { id, due: dueMs / 1000, dueMs, dest: 'test', params };
}

const ids = (list: QueList): string[] => [...list].map((e) => e.id);

/** A small deterministic PRNG (mulberry32), so a failure can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const byDueThenId = (a: QueEntry, b: QueEntry): number =>
  a.dueMs - b.dueMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

describe('QueList ordering', () => {
  it('keeps the earliest due at the head', () => {
    const q = new QueList();
    q.insert(entry('b', 3000));
    q.insert(entry('a', 5000));
    q.insert(entry('c', 1000));
    expect(ids(q)).toEqual(['c', 'b', 'a']);
    expect(q.head()?.id).toBe('c');
    expect(q.size).toBe(3);
  });

  it('breaks equal dues by id, so older ids run first', () => {
    const q = new QueList();
    q.insert(entry('20261121.0527.42.578.3', 1000));
    q.insert(entry('20261121.0527.42.578.1', 1000));
    q.insert(entry('20261121.0527.42.578.2', 1000));
    expect(ids(q)).toEqual(['20261121.0527.42.578.1', '20261121.0527.42.578.2', '20261121.0527.42.578.3']);
  });

  it('re-inserting an id replaces it at its new place', () => {
    const q = new QueList();
    q.insert(entry('a', 1000));
    q.insert(entry('b', 2000));
    q.insert(entry('a', 3000));
    expect(ids(q)).toEqual(['b', 'a']);
    expect(q.size).toBe(2);
    expect(q.get('a')?.dueMs).toBe(3000);
  });

  it('removes by id and answers has/get', () => {
    const q = new QueList();
    q.insert(entry('a', 1000));
    q.insert(entry('b', 2000));
    expect(q.remove('a')?.id).toBe('a');
    expect(q.has('a')).toBe(false);
    expect(q.get('a')).toBeUndefined();
    expect(q.remove('a')).toBeUndefined();
    expect(ids(q)).toEqual(['b']);
  });

  it('slices from the head, skipping an offset', () => {
    const q = new QueList();
    for (const [i, id] of ['d', 'c', 'b', 'a'].entries()) q.insert(entry(id, i));
    expect(q.slice(0, 2).map((e) => e.id)).toEqual(['d', 'c']);
    expect(q.slice(0, 10)).toHaveLength(4);
    expect(q.slice(1, 2).map((e) => e.id)).toEqual(['c', 'b']);
    expect(q.slice(3, Infinity).map((e) => e.id)).toEqual(['a']);
    expect(q.slice(4, 2)).toEqual([]);
    // After the head moved on (a dead prefix), the offset counts from the live head.
    q.remove('d');
    expect(q.slice(1, 2).map((e) => e.id)).toEqual(['b', 'a']);
  });

  it('load sorts, drops duplicate ids (the last wins) and replaces what was there', () => {
    const q = new QueList();
    q.insert(entry('old', 0));
    q.load([entry('b', 2000), entry('a', 2000), entry('c', 1000), entry('b', 500)]);
    expect(ids(q)).toEqual(['b', 'c', 'a']);
    expect(q.has('old')).toBe(false);
    expect(q.get('b')?.dueMs).toBe(500);
  });

  it('stays sorted through 10,000 random inserts and removes', () => {
    const rand = rng(0x5eed);
    const q = new QueList();
    const ref = new Map<string, QueEntry>();
    for (let i = 0; i < 10_000; i++) {
      const r = rand();
      if (r < 0.6 || ref.size === 0) {
        // Few distinct dues, so ties by id are common; ids may repeat (re-insert).
        const id = `20261121.0527.42.578.${Math.floor(rand() * 5000)}`;
        const e = entry(id, Math.floor(rand() * 200) * 1000);
        q.insert(e);
        ref.set(id, e);
      } else {
        const keys = [...ref.keys()];
        const id = keys[Math.floor(rand() * keys.length)]!;
        expect(q.remove(id)?.id).toBe(id);
        ref.delete(id);
      }
      if (i % 997 === 0) expect(ids(q)).toEqual([...ref.values()].sort(byDueThenId).map((e) => e.id));
    }
    expect(q.size).toBe(ref.size);
    expect(ids(q)).toEqual([...ref.values()].sort(byDueThenId).map((e) => e.id));
    for (const id of ref.keys()) expect(q.get(id)).toBe(ref.get(id));
    // Drain from the head: always the minimum of what is left.
    const sorted = [...ref.values()].sort(byDueThenId);
    for (const e of sorted) {
      expect(q.head()).toBe(e);
      q.remove(e.id);
    }
    expect(q.size).toBe(0);
    expect(q.head()).toBeUndefined();
  });
});

describe('QueList coalescing', () => {
  const p = (p1: unknown, p2: unknown = null): unknown[] => [p1, p2, null, null];

  it('finds no duplicates while coalescing is off', () => {
    const q = new QueList();
    q.insert(entry('a', 1, p('fast')));
    q.insert(entry('b', 2, p('fast')));
    expect(q.duplicatesOf(q.get('a')!)).toEqual([]);
  });

  it('finds waiting messages with equal coalesce params, whatever their due', () => {
    const q = new QueList();
    q.setCoalesceParams([1]);
    const m3 = entry('m3', 1000, p('fast'));
    q.insert(entry('m1', 9_000_000, p('fast', 'x')));
    q.insert(entry('m2', 9_000_001, p('fast', 'y')));
    q.insert(entry('other', 5, p('slow')));
    q.insert(m3);
    expect(q.duplicatesOf(m3).map((e) => e.id).sort()).toEqual(['m1', 'm2']);
  });

  it('compares every coalesce param, with null for a missing one', () => {
    const q = new QueList();
    q.setCoalesceParams([1, 2]);
    q.insert(entry('a', 1, ['x', null, 'z', null]));
    q.insert(entry('b', 2, ['x', null, 'other', null]));
    q.insert(entry('c', 3, ['x', 'y', null, null]));
    q.insert(entry('d', 4, ['x']));
    const m = entry('m', 0, ['x', null, null, null]);
    expect(q.duplicatesOf(m).map((e) => e.id).sort()).toEqual(['a', 'b', 'd']);
  });

  it('tells JSON values apart: "1" is not 1', () => {
    const q = new QueList();
    q.setCoalesceParams([1]);
    q.insert(entry('s', 1, p('1')));
    q.insert(entry('n', 2, p(1)));
    expect(q.duplicatesOf(entry('m', 0, p('1'))).map((e) => e.id)).toEqual(['s']);
  });

  it('forgets removed messages and sees re-inserted ones', () => {
    const q = new QueList();
    q.setCoalesceParams([1]);
    q.insert(entry('a', 1, p('k')));
    q.insert(entry('b', 2, p('k')));
    const m = entry('m', 0, p('k'));
    q.remove('a');
    expect(q.duplicatesOf(m).map((e) => e.id)).toEqual(['b']);
    q.insert(entry('b', 3, p('other')));
    expect(q.duplicatesOf(m)).toEqual([]);
    q.insert(entry('a', 4, p('k')));
    expect(q.duplicatesOf(m).map((e) => e.id)).toEqual(['a']);
  });

  it('indexes what was already waiting when coalescing is turned on, and drops it when off', () => {
    const q = new QueList();
    q.insert(entry('a', 1, p('k')));
    q.load([entry('a', 1, p('k')), entry('b', 2, p('k'))]);
    q.setCoalesceParams([1]);
    expect(q.duplicatesOf(q.get('a')!).map((e) => e.id)).toEqual(['b']);
    q.setCoalesceParams([]);
    expect(q.duplicatesOf(q.get('a')!)).toEqual([]);
  });

  it('keeps the index in step with load()', () => {
    const q = new QueList();
    q.setCoalesceParams([1]);
    q.insert(entry('gone', 1, p('k')));
    q.load([entry('a', 1, p('k')), entry('b', 2, p('k'))]);
    expect(q.duplicatesOf(entry('m', 0, p('k'))).map((e) => e.id).sort()).toEqual(['a', 'b']);
  });
});

describe('paramKey', () => {
  it('is equal exactly when the chosen params are equal', () => {
    const a = ['x', 'y', 'z', null];
    const b = ['x', 'other', 'z'];
    expect(paramKey(a, [1, 3])).toBe(paramKey(b, [1, 3]));
    expect(paramKey(a, [2])).not.toBe(paramKey(b, [2]));
    expect(paramKey(a, [4])).toBe(paramKey(b, [4]));
  });

  it('keys a big param by its digest, never equal to a param that is its JSON text or the digest', () => {
    const digest = 'ab'.repeat(32);
    const big = new BigParam(digest);
    expect(paramKey([big], [1])).toBe(paramKey([new BigParam(digest)], [1]));
    expect(paramKey([big], [1])).not.toBe(paramKey([new BigParam('cd'.repeat(32))], [1]));
    for (const other of [digest, `#${digest}`, { digest }, null]) expect(paramKey([big], [1])).not.toBe(paramKey([other], [1]));
  });
});
