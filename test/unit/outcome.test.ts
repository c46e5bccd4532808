// How a run ends (docs/scripts.md, "Exit status"): the worker's exit plus its first
// completion report give the next state and, in the hard cases, RQ's exact status text.
import { describe, expect, it } from 'vitest';
import { MAX_RESEND_STATUS, decideOutcome, describeExit, type RunExit } from '../../src/spawn/outcome.js';
import { parseLine, type Completion } from '../../src/spawn/pipe-protocol.js';

const OK: RunExit = { pid: 12, code: 0, signal: null };
const EXIT1: RunExit = { pid: 12, code: 1, signal: null };
const TERM: RunExit = { pid: 12, code: null, signal: 'SIGTERM' };

function completion(line: string): Completion {
  const r = parseLine(line);
  if (r.kind !== 'done' && r.kind !== 'err' && r.kind !== 'relayed' && r.kind !== 'resend') {
    throw new Error(`${line} is not a completion`);
  }
  return r;
}

const improper = (word: string, st: string): string =>
  `PROCESS EXITED IMPROPERLY - MOVING TO ERR - Completion was ${word} but exit status was ${st}`;
const noCompletion = (st: string): string => `PROCESS EXITED IMPROPERLY - MOVING TO ERR - no completion line, and exit status was ${st}`;

describe('describeExit', () => {
  it('prints an exit code as RQ does', () => {
    expect(describeExit(EXIT1)).toBe('pid 12 exit 1');
    expect(describeExit({ pid: 4242, code: 255, signal: null })).toBe('pid 4242 exit 255');
  });

  it.each<[NodeJS.Signals, string]>([
    ['SIGTERM', 'pid 12 SIGTERM (signal 15)'],
    ['SIGKILL', 'pid 12 SIGKILL (signal 9)'],
    ['SIGINT', 'pid 12 SIGINT (signal 2)'],
    ['SIGSEGV', 'pid 12 SIGSEGV (signal 11)'],
    ['SIGHUP', 'pid 12 SIGHUP (signal 1)'],
  ])('prints %s with its number', (signal, text) => {
    expect(describeExit({ pid: 12, code: null, signal })).toBe(text);
  });
});

describe('decideOutcome: exit 0', () => {
  it.each<[string, 'done' | 'relayed' | 'err']>([
    ['done', 'done'],
    ['done done sleeping', 'done'],
    ['relayed http://h:1/q/test/20261121.0527.42.578.1', 'relayed'],
    ['err by design', 'err'],
    ['fails by design', 'err'],
  ])('%j → %s, keeping the last status line', (line, state) => {
    const out = decideOutcome(OK, completion(line), 0, 15);
    expect(out).toEqual({ state });
  });

  it('sends a message without a completion report to err, status unchanged', () => {
    expect(decideOutcome(OK, undefined, 0, 15)).toEqual({ state: 'err' });
  });

  it('requeues after resend N while count < max_count, with the delay', () => {
    expect(decideOutcome(OK, completion('resend 2'), 1, 3)).toEqual({ state: 'que', delaySec: 2 });
    expect(decideOutcome(OK, completion('resend 300-memcache down'), 14, 15)).toEqual({ state: 'que', delaySec: 300 });
  });

  it('sends resend to err once count reaches max_count', () => {
    expect(decideOutcome(OK, completion('resend 0'), 3, 3)).toEqual({ state: 'err', status: MAX_RESEND_STATUS });
    expect(decideOutcome(OK, completion('resend 0'), 4, 3)).toEqual({ state: 'err', status: MAX_RESEND_STATUS });
    expect(decideOutcome(OK, completion('resend 1'), 0, 0)).toEqual({ state: 'err', status: MAX_RESEND_STATUS });
    expect(MAX_RESEND_STATUS).toBe('HIT MAX RESEND COUNT - MOVING TO ERR');
  });
});

describe('decideOutcome: non-zero exit or signal', () => {
  it.each([['err by design'], ['fails by design']])('%j keeps err with its own status', (line) => {
    expect(decideOutcome(EXIT1, completion(line), 0, 15)).toEqual({ state: 'err' });
    expect(decideOutcome(TERM, completion(line), 0, 15)).toEqual({ state: 'err' });
  });

  it('said done, exited 1: err, PROCESS EXITED IMPROPERLY (send_test_sneaky.sh)', () => {
    expect(decideOutcome(EXIT1, completion('done'), 0, 15)).toEqual({
      state: 'err',
      status: 'PROCESS EXITED IMPROPERLY - MOVING TO ERR - Completion was done but exit status was pid 12 exit 1',
    });
  });

  it.each<[string, string]>([
    ['relayed http://h:1/q/x/1', 'relayed'],
    ['resend 5', 'resend'],
    ['done', 'done'],
  ])('%j then a non-zero exit names the completion', (line, word) => {
    expect(decideOutcome({ pid: 7, code: 2, signal: null }, completion(line), 0, 15)).toEqual({
      state: 'err',
      status: improper(word, 'pid 7 exit 2'),
    });
  });

  it('no completion and a non-zero exit says so (RQ printed an empty word and two spaces)', () => {
    const out = decideOutcome(EXIT1, undefined, 0, 15);
    expect(out).toEqual({
      state: 'err',
      status: 'PROCESS EXITED IMPROPERLY - MOVING TO ERR - no completion line, and exit status was pid 12 exit 1',
    });
  });

  it('describes a signal death', () => {
    expect(decideOutcome(TERM, completion('done'), 0, 15)).toEqual({
      state: 'err',
      status: improper('done', 'pid 12 SIGTERM (signal 15)'),
    });
    expect(decideOutcome({ pid: 9, code: null, signal: 'SIGKILL' }, undefined, 0, 15)).toEqual({
      state: 'err',
      status: noCompletion('pid 9 SIGKILL (signal 9)'),
    });
  });

  it('does not requeue a resend after a bad exit, even with resends left', () => {
    const out = decideOutcome(EXIT1, completion('resend 1'), 0, 15);
    expect(out.state).toBe('err');
  });

  it('gives the improper-exit text rather than the max-resend one', () => {
    expect(decideOutcome(EXIT1, completion('resend 1'), 15, 15)).toEqual({
      state: 'err',
      status: improper('resend', 'pid 12 exit 1'),
    });
  });
});

describe('decideOutcome: timeout (beyond RQ)', () => {
  it('sends a timed-out run to err, whatever it reported', () => {
    const exit: RunExit = { ...TERM, timedOutAfterSec: 30 };
    const status = 'TIMEOUT - killed after 30s - MOVING TO ERR - pid 12 SIGTERM (signal 15)';
    for (const first of [undefined, completion('done'), completion('resend 1'), completion('err x')]) {
      expect(decideOutcome(exit, first, 0, 15)).toEqual({ state: 'err', status });
    }
  });

  it('wins even when the killed worker exited 0', () => {
    const out = decideOutcome({ pid: 3, code: 0, signal: null, timedOutAfterSec: 1.5 }, completion('done'), 0, 15);
    expect(out).toEqual({ state: 'err', status: 'TIMEOUT - killed after 1.5s - MOVING TO ERR - pid 3 exit 0' });
  });
});

describe('describeExit for any signal', () => {
  it('names signals outside the common set with their numbers', () => {
    expect(describeExit({ pid: 7, code: null, signal: 'SIGXCPU' })).toBe('pid 7 SIGXCPU (signal 24)');
  });
});
