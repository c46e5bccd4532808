/** How pages print values (src/web/format.ts), odd `due` values included. */
import { describe, expect, it } from 'vitest';
import { shown, utcTime } from '../../src/web/format.js';

describe('utcTime', () => {
  it('formats epoch seconds, numbers or RQ strings, in UTC', () => {
    expect(utcTime(1_700_000_000)).toBe('2023-11-14 22:13:20 UTC');
    expect(utcTime('1700000000.5')).toBe('2023-11-14 22:13:20 UTC');
  });

  it('says a value is not a time instead of throwing, however odd', () => {
    for (const v of [1e300, -5, 0, 'soon', null, undefined, {}, Number.NaN]) expect(utcTime(v), String(v)).toBeUndefined();
  });
});

describe('shown', () => {
  it('prints strings bare, nothing for undefined, and JSON for the rest', () => {
    expect(shown('a <b>')).toBe('a <b>');
    expect(shown(undefined)).toBe('');
    expect(shown(null)).toBe('null');
    expect(shown({ a: [1] })).toBe('{"a":[1]}');
  });
});
