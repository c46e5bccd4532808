// Queue names (spec/rq.md §10.1): the one check every front door makes before a name
// becomes a path.
import { describe, expect, it } from 'vitest';
import { isValidQueueName } from '../../src/domain/names.js';

describe('isValidQueueName', () => {
  it.each([['bad que test'], ['bad.que.test'], ['bad/que/test']])('refuses %j, as test_que_create_naming.sh expects', (name) => {
    expect(isValidQueueName(name)).toBe(false);
  });

  it.each([...' "#$%&\'()*+,./:;<=>?@[]^`{|}~'].map((c) => [c]))('refuses a name containing %j', (c) => {
    expect(isValidQueueName(`a${c}b`)).toBe(false);
    expect(isValidQueueName(c)).toBe(false);
  });

  it.each([['\t'], ['\n'], ['\r'], ['\0'], ['\x1b'], ['\x7f'], ['\\']])(
    'refuses the control character or backslash %j',
    (c) => {
      expect(isValidQueueName(`a${c}b`)).toBe(false);
    },
  );

  it.each([
    ['test'],
    ['test_run'],
    ['test-nop'],
    ['wow!'],
    ['-'],
    ['_'],
    ['!'],
    ['Q1'],
    ['café'],
    ['очередь'],
    ['队列'],
    ['rq🚀'],
  ])('allows %j', (name) => {
    expect(isValidQueueName(name)).toBe(true);
  });

  it('refuses the empty string and non-strings', () => {
    expect(isValidQueueName('')).toBe(false);
    expect(isValidQueueName(undefined)).toBe(false);
    expect(isValidQueueName(42)).toBe(false);
    expect(isValidQueueName(['test'])).toBe(false);
  });

  it('allows up to 128 characters', () => {
    expect(isValidQueueName('q'.repeat(128))).toBe(true);
    expect(isValidQueueName('q'.repeat(129))).toBe(false);
  });
});
