// The pure parts of the worker runner (spec/rq.md §3.1, §1.9): the argv that Ruby's
// exec(string) would use for "<exec_prefix> <real script>", and the start-marker time.
import { afterEach, describe, expect, it } from 'vitest';
import { localTimestamp } from '../../src/lib/local-time.js';
import { commandArgv } from '../../src/worker/runner.js';

const SCRIPT = '/srv/rq/test/test_script.sh';

describe('commandArgv', () => {
  it('runs through a login bash when exec_prefix is null', () => {
    expect(commandArgv(null, SCRIPT)).toEqual(['bash', '-lc', SCRIPT]);
  });

  it('executes the script directly when exec_prefix is empty', () => {
    expect(commandArgv('', SCRIPT)).toEqual([SCRIPT]);
  });

  it('splits a plain prefix on blanks and trims it', () => {
    expect(commandArgv('nice -n 5', SCRIPT)).toEqual(['nice', '-n', '5', SCRIPT]);
    expect(commandArgv('  bash -lc  ', SCRIPT)).toEqual(['bash', '-lc', SCRIPT]);
    expect(commandArgv('ruby\t-w', SCRIPT)).toEqual(['ruby', '-w', SCRIPT]);
    expect(commandArgv('   ', SCRIPT)).toEqual([SCRIPT]);
  });

  it.each([
    ['*'], ['?'], ['{'], ['}'], ['['], [']'], ['<'], ['>'], ['('], [')'], ['~'], ['&'], ['|'], ['\\'], ['$'], [';'],
    ["'"], ['"'], ['`'], ['\n'], ['#'],
  ])('runs through /bin/sh -c when the command contains %j', (meta) => {
    const prefix = `env X${meta}`;
    expect(commandArgv(prefix, SCRIPT)).toEqual(['/bin/sh', '-c', `${prefix} ${SCRIPT}`]);
  });

  it('runs through /bin/sh -c when the command starts with NAME=value', () => {
    expect(commandArgv('FOO=1', SCRIPT)).toEqual(['/bin/sh', '-c', `FOO=1 ${SCRIPT}`]);
    expect(commandArgv('_X9=a nice', SCRIPT)).toEqual(['/bin/sh', '-c', `_X9=a nice ${SCRIPT}`]);
  });

  it('does not take a later = or a leading =/digit for an assignment', () => {
    expect(commandArgv('env A=1', SCRIPT)).toEqual(['env', 'A=1', SCRIPT]);
    expect(commandArgv('9X=1', SCRIPT)).toEqual(['9X=1', SCRIPT]);
  });

  it('runs a script path with shell characters through /bin/sh as one string', () => {
    expect(commandArgv('', '/srv/rq (copy)/s.sh')).toEqual(['/bin/sh', '-c', '/srv/rq (copy)/s.sh']);
  });
});

describe('localTimestamp', () => {
  const saved = process.env['TZ'];
  afterEach(() => {
    if (saved === undefined) delete process.env['TZ'];
    else process.env['TZ'] = saved;
  });

  const AT = new Date(Date.UTC(2026, 10, 21, 5, 27, 44, 900));

  it('formats like RQ\'s start marker in UTC', () => {
    process.env['TZ'] = 'UTC';
    expect(localTimestamp(AT)).toBe('2026-11-21 05:27:44 +0000');
  });

  it('uses local time with a negative offset', () => {
    process.env['TZ'] = 'America/New_York';
    expect(localTimestamp(AT)).toBe('2026-11-21 00:27:44 -0500');
  });

  it('prints half-hour offsets and crosses the date line', () => {
    process.env['TZ'] = 'Asia/Kolkata';
    expect(localTimestamp(new Date(Date.UTC(2026, 11, 31, 20, 0, 5)))).toBe('2027-01-01 01:30:05 +0530');
  });

  it('zero-pads every field', () => {
    process.env['TZ'] = 'UTC';
    expect(localTimestamp(new Date(Date.UTC(2001, 0, 2, 3, 4, 5)))).toBe('2001-01-02 03:04:05 +0000');
  });
});
