// Ruby's lenient number parsing (as RQ parsed numbers), which count, max_count, num_workers,
// resend delays and due times all go through.
import { describe, expect, it } from 'vitest';
import { rubyToF, rubyToI } from '../../src/domain/ruby.js';

describe('rubyToI', () => {
  it.each<[unknown, number]>([
    ['12abc', 12],
    ['abc', 0],
    ['', 0],
    [null, 0],
    [undefined, 0],
    ['-3', -3],
    ['+7', 7],
    ['  42  ', 42],
    ['1.9', 1],
    ['300-memcache down', 300],
    ['007', 7],
    ['1_000', 1000],
    ['1_000_000x', 1000000],
    ['-2_5', -25],
    ['_5', 0],
    ['1__2', 1],
    ['1_', 1],
    ['12_a', 12],
    ['+_3', 0],
    [15, 15],
    [2.7, 2],
    [-2.7, -2],
    [Number.NaN, 0],
    [Number.POSITIVE_INFINITY, 0],
    [[1], 0],
    [{}, 0],
  ])('%j → %d', (input, expected) => {
    expect(rubyToI(input)).toBe(expected);
  });

  it('never returns a non-integer', () => {
    for (const v of ['3.99', '-0.5', 1e-9, '9e3']) expect(Number.isInteger(rubyToI(v))).toBe(true);
  });
});

describe('rubyToF', () => {
  it.each<[unknown, number]>([
    ['1.5e2x', 150],
    ['1795238778', 1795238778],
    ['1795238778.25', 1795238778.25],
    ['12abc', 12],
    ['abc', 0],
    [null, 0],
    ['-3', -3],
    ['-2.5e-1', -0.25],
    [' 4.5', 4.5],
    ['1e', 1],
    ['3.', 3],
    ['1_000.5', 1000.5],
    ['1_0.2_5', 10.25],
    ['2e1_0', 2e10],
    ['_1.5', 0],
    ['1__2.5', 1],
    ['1._5', 1],
    ['1.5__5', 1.5],
    ['4e_2', 4],
    ['._5', 0],
    [1795238778.5, 1795238778.5],
    [Number.NaN, 0],
    [true, 0],
  ])('%j → %d', (input, expected) => {
    expect(rubyToF(input)).toBe(expected);
  });

  it('orders string dues the way numbers order', () => {
    const dues = ['100', '99.5', '1e3', '-1'];
    expect([...dues].sort((a, b) => rubyToF(a) - rubyToF(b))).toEqual(['-1', '99.5', '100', '1e3']);
  });
});

describe('rubyToF without a leading digit', () => {
  it('reads ".5" as 0.5, as Ruby does', () => {
    expect(rubyToF('.5')).toBe(0.5);
    expect(rubyToF('-.25x')).toBe(-0.25);
  });
});
