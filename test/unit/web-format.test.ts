/** How pages print values (src/web/format.ts, src/lib/bytes.ts), odd `due` values included. */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { formatBytes } from '../../src/lib/bytes.js';
import { retentionText, shown, utcTime } from '../../src/web/format.js';

describe('utcTime', () => {
  it('formats epoch seconds, numbers or RQ strings, in UTC', () => {
    expect(utcTime(1_700_000_000)).toBe('2023-11-14 22:13:20 UTC');
    expect(utcTime('1700000000.5')).toBe('2023-11-14 22:13:20 UTC');
  });

  it('says a value is not a time instead of throwing, however odd', () => {
    for (const v of [1e300, -5, 0, 'soon', null, undefined, {}, Number.NaN]) expect(utcTime(v), inspect(v)).toBeUndefined();
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

describe('formatBytes', () => {
  it('prints bytes in binary units with one decimal, as du -h does', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(1_048_575)).toBe('1.0 MiB');
    expect(formatBytes(10_737_418_240)).toBe('10.0 GiB');
    expect(formatBytes(2 ** 60)).toBe('1024.0 PiB');
    expect(formatBytes(Number.NaN)).toBe('0 B');
  });
});

describe('retentionText', () => {
  it('says each limit, or that there is none', () => {
    expect(retentionText({ max_age_days: 2, max_count: 60000, max_bytes: 10_737_418_240 })).toBe('2 days, 60000 messages, 10.0 GiB');
    expect(retentionText({ max_age_days: 1, max_count: 1, max_bytes: null })).toBe('1 day, 1 message');
    expect(retentionText({ max_age_days: null, max_count: null, max_bytes: null })).toBe('no limit');
  });
});
