// The message states and the table of legal moves (docs/layout.md). The store
// refuses any move not in the table, so the table is the whole lifecycle.
import { describe, expect, it } from 'vitest';
import { HASHED_STATES, STATES, TRANSITIONS, isLegalMove, isState, type State } from '../../src/domain/states.js';

const LEGAL: ReadonlyArray<[State, State]> = [
  ['prep', 'que'], // commit
  ['que', 'run'], // scheduler start
  ['que', 'done'], // coalesced into a message that ended done
  ['que', 'relayed'], // coalesced into a message that ended relayed
  ['que', 'err'], // a pull message failed before a lease (Workq fail), or unreadable at a lease
  ['run', 'done'],
  ['run', 'relayed'],
  ['run', 'err'],
  ['run', 'que'], // resend, start-up recovery, or a pull lease that ends
  ['err', 'que'], // a pull queue's dead letter respawned
  ['err', 'done'], // a pull queue's dead letter acknowledged
];

describe('STATES', () => {
  it('names exactly the state directories', () => {
    expect([...STATES].sort()).toEqual(['done', 'err', 'prep', 'que', 'relayed', 'run']);
  });

  it('hashes only done and relayed', () => {
    expect(STATES.filter((s) => HASHED_STATES.has(s)).sort()).toEqual(['done', 'relayed']);
  });
});

describe('TRANSITIONS', () => {
  it('lists every legal move and nothing else', () => {
    const listed = STATES.flatMap((from) => TRANSITIONS[from].map((to) => `${from}→${to}`)).sort();
    expect(listed).toEqual(LEGAL.map(([from, to]) => `${from}→${to}`).sort());
  });

  it.each(LEGAL)('%s → %s is legal', (from, to) => {
    expect(isLegalMove(from, to)).toBe(true);
  });

  const illegal = STATES.flatMap((from) =>
    STATES.filter((to) => !LEGAL.some(([f, t]) => f === from && t === to)).map((to): [State, State] => [from, to]),
  );
  it.each(illegal)('%s → %s is illegal', (from, to) => {
    expect(isLegalMove(from, to)).toBe(false);
  });

  it('has no way out of done or relayed: a clone is a new message; err is left only as a dead letter is', () => {
    for (const s of ['done', 'relayed'] as const) expect(TRANSITIONS[s]).toEqual([]);
    expect(isLegalMove('done', 'que')).toBe(false);
    expect([...TRANSITIONS.err].sort()).toEqual(['done', 'que']);
  });

  it('never runs a message straight from prep', () => {
    expect(isLegalMove('prep', 'run')).toBe(false);
  });
});

describe('isState', () => {
  it.each(STATES.map((s) => [s]))('accepts %s', (s) => {
    expect(isState(s)).toBe(true);
  });

  it.each([['pause'], ['Done'], ['que '], [''], ['toString'], [null], [1]])('rejects %j', (v) => {
    expect(isState(v)).toBe(false);
  });
});
