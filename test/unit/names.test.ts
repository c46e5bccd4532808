// Queue names: the one check every front door makes before a name
// becomes a path.
import { describe, expect, it } from 'vitest';
import { isNewRqQueueName, isProtocolQueueName, isRqQueueName, isValidQueueName } from '../../src/domain/names.js';

describe('isRqQueueName (RQ’s own forms)', () => {
  it.each([['bad que test'], ['bad.que.test'], ['bad/que/test']])('refuses %j, as test_que_create_naming.sh expects', (name) => {
    expect(isRqQueueName(name)).toBe(false);
  });

  it.each([...' "#$%&\'()*+,./:;<=>?@[]^`{|}~'].map((c) => [c]))('refuses a name containing %j', (c) => {
    expect(isRqQueueName(`a${c}b`)).toBe(false);
    expect(isRqQueueName(c)).toBe(false);
  });

  it.each([['\t'], ['\n'], ['\r'], ['\0'], ['\x1b'], ['\x7f'], ['\\']])(
    'refuses the control character or backslash %j',
    (c) => {
      expect(isRqQueueName(`a${c}b`)).toBe(false);
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
    expect(isRqQueueName(name)).toBe(true);
  });

  it('refuses the empty string and non-strings', () => {
    expect(isRqQueueName('')).toBe(false);
    expect(isRqQueueName(undefined)).toBe(false);
    expect(isRqQueueName(42)).toBe(false);
    expect(isRqQueueName(['test'])).toBe(false);
  });

  it('allows up to 128 characters', () => {
    expect(isRqQueueName('q'.repeat(128))).toBe(true);
    expect(isRqQueueName('q'.repeat(129))).toBe(false);
  });
});

describe('isNewRqQueueName (RQ’s forms, for a queue made now)', () => {
  it.each([['test'], ['test_run'], ['test-nop'], ['wow!'], ['Q1'], ['q'.repeat(128)]])('allows %j', (name) => {
    expect(isNewRqQueueName(name)).toBe(true);
  });

  it.each([['\uff53\uff45\uff43'], ['sec\u200b'], ['relay\u200b'], ['a\u202eb'], ['sec\u00ad'], ['café'], ['队列'], ['bad que test'], [''], ['q'.repeat(129)]])(
    'refuses %j, which is not ASCII or not of RQ’s rule',
    (name) => {
      expect(isNewRqQueueName(name)).toBe(false);
    },
  );

  it('leaves lookups alone: an older queue named café is still a valid name', () => {
    expect(isValidQueueName('café')).toBe(true);
  });
});

describe('isProtocolQueueName (the pull front doors)', () => {
  it.each([['ns.queue'], ['a-b_c.d'], ['x'.repeat(255)], ['db$(1)+2'], ['_private']])('allows %j', (name) => {
    expect(isProtocolQueueName(name)).toBe(true);
  });

  it.each([['x'.repeat(256)], [''], ['.hidden'], ['.'], ['..'], ['a/b'], ['a b'], ['café'], ['q.deleted.123'], ['a\nb']])('refuses %j', (name) => {
    expect(isProtocolQueueName(name)).toBe(false);
  });
});

describe('isValidQueueName (any queue, before a name becomes a path)', () => {
  it('takes a name of either rule', () => {
    expect(isValidQueueName('wow!')).toBe(true); // RQ's rule only
    expect(isValidQueueName('ns.queue')).toBe(true); // the protocols' rule only
    expect(isValidQueueName('x'.repeat(200))).toBe(true);
  });

  it('never takes a deleted queue’s directory or a hidden name', () => {
    expect(isValidQueueName('jobs.deleted.4242')).toBe(false);
    expect(isValidQueueName('.sockets')).toBe(false);
    expect(isValidQueueName('..')).toBe(false);
  });
});
