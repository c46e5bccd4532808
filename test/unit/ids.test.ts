// Message ids (docs/layout.md): the UTC short id, the hashed placement
// derived from it, and how full ids and relative roots are read.
import { describe, expect, it } from 'vitest';
import {
  SHORT_ID_RE,
  fullId,
  hashParts,
  hostUrl,
  idTimeMs,
  idTimestamp,
  isSafeId,
  isShortId,
  normaliseRelativeRoot,
  parseFullId,
} from '../../src/domain/ids.js';

describe('idTimestamp', () => {
  it('formats the instant in UTC as YYYYMMDD.HHMM.SS.mmm', () => {
    expect(idTimestamp(new Date(Date.UTC(2026, 10, 21, 5, 27, 42, 578)))).toBe('20261121.0527.42.578');
  });

  it('zero-pads every field, milliseconds to three digits', () => {
    expect(idTimestamp(new Date(Date.UTC(2001, 0, 2, 3, 4, 5, 6)))).toBe('20010102.0304.05.006');
    expect(idTimestamp(new Date(Date.UTC(2001, 0, 2, 3, 4, 5, 60)))).toBe('20010102.0304.05.060');
  });

  it('ignores the local time zone', () => {
    const at = new Date(Date.UTC(2026, 11, 31, 23, 59, 59, 999));
    const saved = process.env['TZ'];
    try {
      process.env['TZ'] = 'Asia/Kolkata';
      expect(idTimestamp(at)).toBe('20261231.2359.59.999');
    } finally {
      if (saved === undefined) delete process.env['TZ'];
      else process.env['TZ'] = saved;
    }
  });

  it('sorts chronologically as a string, which listings rely on', () => {
    const times = [Date.UTC(2026, 0, 1, 9, 59, 59, 999), Date.UTC(2026, 0, 1, 10, 0, 0, 0), Date.UTC(2026, 9, 1)];
    const ids = times.map((t) => idTimestamp(new Date(t)));
    expect([...ids].sort()).toEqual(ids);
  });
});

describe('idTimeMs', () => {
  it('reads back the UTC instant of a short id, to the millisecond', () => {
    const at = Date.UTC(2026, 10, 21, 5, 27, 42, 578);
    expect(idTimeMs(`${idTimestamp(new Date(at))}.2581651`)).toBe(at);
    expect(idTimeMs('20010102.0304.05.006.1')).toBe(Date.UTC(2001, 0, 2, 3, 4, 5, 6));
  });

  it('has no time for an id that is not a short id', () => {
    expect(idTimeMs('hand-made')).toBeUndefined();
    expect(idTimeMs('20261121.0527.42.578')).toBeUndefined();
  });
});

describe('SHORT_ID_RE and isShortId', () => {
  it('accepts a timestamp with an inode, as allocated', () => {
    expect(SHORT_ID_RE.test('20261121.0527.42.578.2581651')).toBe(true);
    expect(isShortId(`${idTimestamp(new Date())}.1`)).toBe(true);
  });

  it.each([
    ['the old form without an inode', '20091109.0558.57.780'],
    ['a prep placeholder', '_20261121.0527.42.578'],
    ['trailing text', '20261121.0527.42.578.2581651x'],
    ['a path', '../20261121.0527.42.578.1'],
    ['another separator', '20261121-0527.42.578.1'],
    ['a two-digit millisecond field', '20261121.0527.42.57.1'],
  ])('rejects %s', (_what, id) => {
    expect(isShortId(id)).toBe(false);
  });

  it('rejects non-strings', () => {
    expect(isShortId(20261121)).toBe(false);
    expect(isShortId(null)).toBe(false);
  });
});

describe('isSafeId', () => {
  it('accepts a real short id and other plain names', () => {
    expect(isSafeId('20261121.0527.42.578.2581651')).toBe(true);
    expect(isSafeId('20261121.0527.42.578.258165100110011')).toBe(true);
  });

  it.each([
    ['a slash', '2026/../../etc'],
    ['a NUL byte', '20261121.0527\0'],
    ['a leading dot', '.hidden'],
    ['dot-dot', '..'],
    ['the empty string', ''],
  ])('refuses %s', (_what, id) => {
    expect(isSafeId(id)).toBe(false);
  });

  it('refuses non-strings', () => {
    expect(isSafeId(undefined)).toBe(false);
    expect(isSafeId(['20261121.0527.42.578.1'])).toBe(false);
  });
});

describe('hashParts', () => {
  it('gives the date, hour and minute directories of an id', () => {
    expect(hashParts('20261121.0527.42.578.2581651')).toEqual(['20261121', '05', '27']);
  });

  it('is undefined when the id has no timestamp', () => {
    expect(hashParts('nope')).toBeUndefined();
    expect(hashParts('2026112.0527.42.578.1')).toBeUndefined();
  });
});

describe('parseFullId', () => {
  it('splits a full id into queue and short id', () => {
    expect(parseFullId('http://127.0.0.1:3333/q/test/20261121.0527.42.578.2581651')).toEqual({
      queue: 'test',
      shortId: '20261121.0527.42.578.2581651',
    });
  });

  it('finds the queue behind a relative root', () => {
    expect(parseFullId('http://127.0.0.1:3333/therq/q/test_run/20261121.0527.42.578.1')).toEqual({
      queue: 'test_run',
      shortId: '20261121.0527.42.578.1',
    });
  });

  it('uses the first /q/ match, as RQ does', () => {
    expect(parseFullId('http://h:1/q/first/20261121.0527.42.578.1/q/second/x')).toEqual({
      queue: 'first',
      shortId: '20261121.0527.42.578.1',
    });
  });

  it('reads the queue of a path without a short id', () => {
    expect(parseFullId('/q/test').queue).toBe('test');
  });

  it('takes a bare short id as the short id, with no queue', () => {
    expect(parseFullId('20261121.0527.42.578.1')).toEqual({ queue: undefined, shortId: '20261121.0527.42.578.1' });
  });
});

describe('hostUrl and fullId', () => {
  it('builds the message URL with the relative root', () => {
    const h = { host: '127.0.0.1', port: '3333', relativeRoot: '/therq/' };
    expect(hostUrl(h)).toBe('http://127.0.0.1:3333/therq/');
    expect(fullId(h, 'test', '20261121.0527.42.578.2581651')).toBe(
      'http://127.0.0.1:3333/therq/q/test/20261121.0527.42.578.2581651',
    );
  });

  it('round-trips through parseFullId', () => {
    const id = fullId({ host: 'h', port: '1', relativeRoot: '/' }, 'relay', '20261121.0527.42.578.9');
    expect(parseFullId(id)).toEqual({ queue: 'relay', shortId: '20261121.0527.42.578.9' });
  });
});

describe('normaliseRelativeRoot', () => {
  it.each([
    ['/therq', '/therq/'],
    ['therq', '/therq/'],
    ['/therq/', '/therq/'],
    ['//therq//', '/therq/'],
    ['/a/b', '/a/b/'],
    ['', '/'],
    ['/', '/'],
    ['///', '/'],
  ])('%j → %j', (input, expected) => {
    expect(normaliseRelativeRoot(input)).toBe(expected);
  });

  it('falls back to / for a missing or non-string value', () => {
    expect(normaliseRelativeRoot(undefined)).toBe('/');
    expect(normaliseRelativeRoot(null)).toBe('/');
    expect(normaliseRelativeRoot(5)).toBe('/');
  });
});
