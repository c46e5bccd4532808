/**
 * bin/rq's option parsing (docs/cli.md), RQ's quirks included: an argument that
 * merely contains `--` is an option, its name is the argument minus its first two
 * characters, and a bare option is `true`. Also the help text and the exit-code table.
 */
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/domain/errors.js';
import { EXIT_CODES, parseOptions, usage } from '../../src/cli/rq.js';

const parse = (...args: string[]): Record<string, string | true> => Object.fromEntries(parseOptions(args));

describe('parseOptions', () => {
  it('reads --k=v, splitting at the first =', () => {
    expect(parse('--dest=q1', '--param1=a=b', '--param2=')).toEqual({ dest: 'q1', param1: 'a=b', param2: '' });
  });

  it('reads --k v when the next argument has no --', () => {
    expect(parse('--dest', 'q1', '--src', 'me too')).toEqual({ dest: 'q1', src: 'me too' });
  });

  it('makes a bare option true, also before another option or at the end', () => {
    expect(parse('--force_remote', '--dest', 'q1', '--relay-ok')).toEqual({ force_remote: true, dest: 'q1', 'relay-ok': true });
  });

  it('ignores other arguments and keeps the last of a repeat', () => {
    expect(parse('stray', '--p', '1', 'stray2', '--p=2', '-h')).toEqual({ p: '2' });
  });

  it('treats any argument containing -- as an option (RQ quirk)', () => {
    expect(parse('--param1', 'x--y')).toEqual({ param1: true, '-y': true });
    expect(parse('a--b=c')).toEqual({ '-b': 'c' });
  });
});

describe('usage', () => {
  it('lists the plain command names, sorted, two spaces in', () => {
    const lines = usage().split('\n');
    expect(lines[0]).toBe('Valid commands are:');
    const names = lines.slice(1, -1);
    expect(names).toEqual([...names].sort());
    expect(names).toContain('  sendmesg');
    expect(names.every((l) => /^ {2}[a-z_]+$/.test(l))).toBe(true);
    expect(lines.at(-1)).toBe('');
  });
});

describe('EXIT_CODES', () => {
  it('maps every error code to a failing exit status: 1, as RQ, but 75 (EX_TEMPFAIL) for "try again"', () => {
    expect(Object.keys(EXIT_CODES).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    expect(Object.entries(EXIT_CODES).filter(([, c]) => c !== 1)).toEqual([['RQ_UNAVAILABLE', 75]]);
  });
});
