/**
 * The pure parts of the web pipeline: the relative-root matcher, path
 * clean-up, and RQ's reply dump.
 */
import { describe, expect, it } from 'vitest';
import { cleanPath, rootMatcher } from '../../src/web/pipeline.js';
import { bodyOf, dump, webError } from '../../src/web/web-errors.js';

describe('rootMatcher', () => {
  it('matches the prefix with one or more slashes per slash, then nothing or a /rest', () => {
    const re = rootMatcher('/therq/');
    expect(re.exec('/therq')?.[1]).toBeUndefined();
    expect(re.exec('/therq/')?.[1]).toBe('/');
    expect(re.exec('//therq//q.json')?.[1]).toBe('//q.json');
    expect(re.test('/')).toBe(false);
    expect(re.test('/therqx')).toBe(false);
    expect(re.test('/other/therq')).toBe(false);
  });

  it('treats a regexp character in the prefix literally', () => {
    expect(rootMatcher('/a.b/').test('/axb')).toBe(false);
    expect(rootMatcher('/a.b/').test('/a.b/q.txt')).toBe(true);
  });

  it('matches everything under the default root', () => {
    expect(rootMatcher('/').exec('/q.txt')?.[1]).toBe('/q.txt');
  });
});

describe('cleanPath', () => {
  it.each([
    ['//q/test.txt', '/q/test.txt'],
    ['/q/./test', '/q/test'],
    ['/q/x/../test', '/q/test'],
    ['/../../etc/passwd', '/etc/passwd'],
    ['/q/%2e%2e/%2E%2E/x', '/x'],
    ['/q%2ftest', '/q/test'],
    ['/q/test/', '/q/test/'],
    ['/', '/'],
    ['', '/'],
  ])('%s → %s', (input, want) => {
    expect(cleanPath(input)).toBe(want);
  });
});

describe('dump', () => {
  it('renders a reply as Ruby inspect did', () => {
    expect(dump(['fail', 'msg not found'])).toBe('["fail", "msg not found"]');
    expect(dump(null)).toBe('null');
    expect(dump(['ok', { a: 1 }])).toBe('["ok", {"a":1}]');
  });
});

describe('bodyOf', () => {
  it('prefixes the status, keeps the quotes of RQ texts, and escapes markup a text may echo', () => {
    expect(bodyOf(webError('RQ_UPSTREAM', `Couldn't clone message. ["fail", "msg not found"].`))).toBe(
      `500 - Couldn't clone message. ["fail", "msg not found"].`,
    );
    expect(bodyOf(webError('RQ_BAD_REQUEST', 'Bad JSON body: <img src=x onerror=alert(1)> & co'))).toBe(
      '400 - Bad JSON body: &lt;img src=x onerror=alert(1)&gt; &amp; co',
    );
    expect(bodyOf(webError('RQ_FORBIDDEN', 'Queue creation not allowed at this time.', { bare: true }))).toBe('Queue creation not allowed at this time.');
  });
});
