// Building a new message from client input. Clients see the
// msg JSON byte for byte, so the key order and the defaults are part of the contract.
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { buildMessage, dueMs, fieldText, parseMessage } from '../../src/domain/message.js';

const ID = '20261121.0527.42.578.2581651';
const FULL = `http://127.0.0.1:3333/q/test/${ID}`;
const NOW = 1795238862;

describe('buildMessage', () => {
  it('builds the minimal message in RQ key order, defaulting due to now', () => {
    const msg = buildMessage({ dest: 'test' }, ID, FULL, NOW);
    expect(JSON.stringify(msg)).toBe(
      `{"msg_id":"${ID}","dest":"test","orig_msg_id":"${FULL}","count":0,"max_count":15,"due":${NOW}}`,
    );
  });

  it('puts the optional keys in RQ order whatever the input order, and drops unknown keys', () => {
    const input = {
      _method: 'put',
      force_remote: true,
      due: '1795238778',
      post_run_webhook: ['http://hook'],
      param4: 'd',
      param3: 'c',
      param2: 'b',
      param1: 'a',
      src: 'cli',
      max_count: '3',
      count: '2',
      orig_msg_id: 'http://other/q/x/1',
      dest: 'http://127.0.0.1:3333/q/test',
      cloned_from: 'x',
      status: 'stale',
    };
    const msg = buildMessage(input, ID, FULL, NOW);
    expect(Object.keys(msg)).toEqual([
      'msg_id',
      'dest',
      'orig_msg_id',
      'count',
      'max_count',
      'src',
      'param1',
      'param2',
      'param3',
      'param4',
      'post_run_webhook',
      'due',
      'force_remote',
    ]);
    expect(msg).toMatchObject({
      orig_msg_id: 'http://other/q/x/1',
      count: 2,
      max_count: 3,
      due: '1795238778',
      force_remote: true,
    });
  });

  it('appends a defaulted due after force_remote', () => {
    const msg = buildMessage({ dest: 'test', force_remote: true, param1: 'x' }, ID, FULL, NOW);
    expect(Object.keys(msg)).toEqual(['msg_id', 'dest', 'orig_msg_id', 'count', 'max_count', 'param1', 'force_remote', 'due']);
    expect(msg.due).toBe(NOW);
  });

  it('defaults due also when it is given as null, and keeps its place at the end', () => {
    const msg = buildMessage({ dest: 'test', due: null, force_remote: 'x' }, ID, FULL, NOW);
    expect(Object.keys(msg).slice(-2)).toEqual(['force_remote', 'due']);
    expect(msg.due).toBe(NOW);
  });

  it('keeps a given due exactly as given, string or number', () => {
    expect(buildMessage({ dest: 'q', due: '1795238778' }, ID, FULL, NOW).due).toBe('1795238778');
    expect(buildMessage({ dest: 'q', due: 12.5 }, ID, FULL, NOW).due).toBe(12.5);
  });

  it('copies params that are present even when null, and omits absent ones', () => {
    const msg = buildMessage({ dest: 'q', param1: null, param3: '' }, ID, FULL, NOW);
    expect('param1' in msg).toBe(true);
    expect(msg.param1).toBeNull();
    expect(msg.param3).toBe('');
    expect('param2' in msg).toBe(false);
    expect('param4' in msg).toBe(false);
    expect('src' in msg).toBe(false);
  });

  it('keeps any JSON as dest, even null', () => {
    expect(buildMessage({ dest: null }, ID, FULL, NOW).dest).toBeNull();
    expect(buildMessage({ dest: { a: 1 } }, ID, FULL, NOW).dest).toEqual({ a: 1 });
  });

  it('refuses input without dest, with RQ\'s wording', () => {
    let thrown: unknown;
    try {
      buildMessage({ param1: 'x' }, ID, FULL, NOW);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(RqError);
    expect((thrown as RqError).message).toBe('input missing required "dest" parameter');
    expect((thrown as RqError).code).toBe('RQ_BAD_MESSAGE');
  });

  it('uses its own full id as orig_msg_id unless the input carries one', () => {
    expect(buildMessage({ dest: 'q' }, ID, FULL, NOW).orig_msg_id).toBe(FULL);
    expect(buildMessage({ dest: 'q', orig_msg_id: null }, ID, FULL, NOW).orig_msg_id).toBe(FULL);
    expect(buildMessage({ dest: 'q', orig_msg_id: 'http://a/q/b/1' }, ID, FULL, NOW).orig_msg_id).toBe('http://a/q/b/1');
  });

  it.each<[unknown, number]>([
    ['3', 3],
    ['3abc', 3],
    ['abc', 0],
    [null, 0],
    [4.9, 4],
  ])('reads count %j with Ruby to_i as %d', (count, expected) => {
    const msg = buildMessage({ dest: 'q', count, max_count: count }, ID, FULL, NOW);
    expect(msg.count).toBe(expected);
    expect(msg.max_count).toBe(expected);
  });

  it('defaults count to 0 and max_count to 15 as integers', () => {
    const msg = buildMessage({ dest: 'q' }, ID, FULL, NOW);
    expect(msg.count).toBe(0);
    expect(msg.max_count).toBe(15);
  });

  it('keeps a post_run_webhook that is null or an array of http and https URLs', () => {
    const hooks = ['http://a.example/x', 'https://b.example:8443/y?z=1'];
    expect(buildMessage({ dest: 'q', post_run_webhook: hooks }, ID, FULL, NOW).post_run_webhook).toEqual(hooks);
    expect(buildMessage({ dest: 'q', post_run_webhook: [] }, ID, FULL, NOW).post_run_webhook).toEqual([]);
    expect(buildMessage({ dest: 'q', post_run_webhook: null }, ID, FULL, NOW).post_run_webhook).toBeNull();
  });

  it.each<[unknown, string]>([
    ['http://a.example/x', '"http://a.example/x"'],
    [['ftp://a.example/x'], '["ftp://a.example/x"]'],
    [['a.example/x'], '["a.example/x"]'],
    [['http://a.example/x', 7], '["http://a.example/x",7]'],
    [{ url: 'http://a.example/x' }, '{"url":"http://a.example/x"}'],
    [false, 'false'],
  ])('refuses a post_run_webhook of %j with RQ_BAD_MESSAGE naming the field', (hook, shown) => {
    expect(() => buildMessage({ dest: 'q', post_run_webhook: hook }, ID, FULL, NOW)).toThrow(
      expect.objectContaining({ code: 'RQ_BAD_MESSAGE', message: `Expected "post_run_webhook" to be an array of http or https URLs, got ${shown}` }),
    );
  });

  it('does not share the input object', () => {
    const input: Record<string, unknown> = { dest: 'q', param1: 'a' };
    const msg = buildMessage(input, ID, FULL, NOW);
    msg.param1 = 'changed';
    expect(input['param1']).toBe('a');
    expect('msg_id' in input).toBe(false);
  });
});

describe('fieldText', () => {
  it('gives a field as the RQ_* variables carry it: strings as they are, null and absent empty, the rest as JSON', () => {
    expect(fieldText('a b')).toBe('a b');
    expect(fieldText(null)).toBe('');
    expect(fieldText(undefined)).toBe('');
    expect(fieldText({ a: [1] })).toBe('{"a":[1]}');
    expect(fieldText(12)).toBe('12');
  });
});

describe('dueMs', () => {
  it('reads due in seconds, numbers or strings, into epoch milliseconds', () => {
    expect(dueMs({ due: 1795238778 })).toBe(1795238778000);
    expect(dueMs({ due: '1795238778.5' })).toBe(1795238778500);
    expect(dueMs({ due: 'soon' })).toBe(0);
  });
});

describe('parseMessage', () => {
  it('keeps unknown keys of a stored message', () => {
    const msg = parseMessage(`{"msg_id":"${ID}","dest":"q","count":0,"max_count":15,"dups":["a"],"extra":1}`, 'x');
    expect(msg.dups).toEqual(['a']);
    expect(msg['extra']).toBe(1);
  });

  it('names the place in the error for broken JSON or a non-message', () => {
    expect(() => parseMessage('{', 'queue/test/que/1/msg')).toThrow(/queue\/test\/que\/1\/msg/);
    expect(() => parseMessage('[1]', 'here')).toThrow(RqError);
    expect(() => parseMessage('{"dest":"q"}', 'here')).toThrow(/here/);
  });
});
