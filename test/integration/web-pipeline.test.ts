/**
 * The web's request pipeline and HTTP layer (docs/http-api.md) against the real web
 * process over real sockets: one request per connection, single-write replies, methods
 * and POST headers, absolute request URIs, the relative root, Basic auth, allowed_ips,
 * path clean-up, request ids and security headers, the Not Found page with the flash,
 * body limits and bad bodies, and 503 while rq-mgr is not running.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestRoot } from '../helpers/install.js';
import { rackTemps, sharedInstall } from '../helpers/web.js';

describe('HTTP layer', () => {
  const { t, web } = sharedInstall({ setup: (root) => root.addQueue({ name: 'test', script: 'done.sh' }) });

  it('answers an HTTP/1.0 request with an HTTP/1.1 status line, Connection: close and the whole reply in one read', async () => {
    const reply = await web().raw('GET /q.txt HTTP/1.0\r\n\r\n');
    expect(reply).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(reply).toMatch(/\r\nConnection: close\r\n/i);
    const [head, body] = reply.split('\r\n\r\n');
    expect(Number(/content-length: (\d+)/i.exec(head!)?.[1])).toBe(Buffer.byteLength(body!));
    expect(body).toContain('/q/test.txt');
  });

  it('keeps no connection alive: one request per connection', async () => {
    const reply = await web().raw('GET /q.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /q.txt HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(reply.match(/^HTTP\/1\.1 /gm)).toHaveLength(1);
  });

  it('refuses methods other than GET and POST with 405 and Allow (RQ: 500), HEAD included', async () => {
    for (const m of ['PUT', 'DELETE', 'HEAD', 'PATCH']) {
      const reply = await web().raw(`${m} / HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(reply, m).toMatch(/^HTTP\/1\.1 405 /);
      expect(reply, m).toMatch(/^Allow: GET, POST\r$/im);
    }
    const reply = await web().raw('PUT / HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(reply).toContain('<title>405 Method Not Allowed</title>');
  });

  it('needs Content-Length and Content-Type on a POST', async () => {
    const noLength = await web().raw('POST /q/test/new_message HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n');
    expect(noLength).toMatch(/^HTTP\/1\.1 400 /);
    expect(noLength).toContain('<title>400 Bad Request no content-length</title>');
    const noType = await web().raw('POST /q/test/new_message HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}');
    expect(noType).toContain('<title>400 Bad Request no content-type</title>');
  });

  it('answers Expect: 100-continue with an interim 100, and another Expect with 417', async () => {
    const body = 'mesg=' + encodeURIComponent(JSON.stringify({ dest: 'test' }));
    const cont = await web().raw(
      `POST /q/test/new_message HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(cont).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
    const other = await web().raw('GET / HTTP/1.1\r\nHost: x\r\nExpect: something\r\n\r\n');
    expect(other).toMatch(/^HTTP\/1\.1 417 /);
  });

  it('accepts an absolute URI in the request line', async () => {
    const reply = await web().raw(`GET http://127.0.0.1:${web().port}/q.txt HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(reply).toContain('/q/test.txt');
  });

  it('cleans the path: // collapses, . and .. segments and %2e/%2f are resolved inside the root', async () => {
    for (const p of ['//q/test.txt', '/q/./test.txt', '/q/x/../test.txt', '/q%2ftest.txt', '/../../q/test.txt']) {
      const res = await web().get(p);
      expect(res.status, p).toBe(200);
      expect(await res.text(), p).toMatch(/^status: UP\n/);
    }
  });

  it('sends a request id, a strict CSP and nosniff on every reply, and keeps a sane client request id', async () => {
    const a = await web().get('/');
    expect(a.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(a.headers.get('content-security-policy')).not.toMatch(/script-src[^;]*unsafe-inline/);
    expect(a.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await web().get('/', { 'x-request-id': 'abc-123' })).headers.get('x-request-id')).toBe('abc-123');
    expect((await web().get('/', { 'x-request-id': 'bad id' })).headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect((await web().get('/nope')).headers.get('x-request-id')).toBeTruthy();
  });

  it('draws every 404 as the Not Found page inside the layout', async () => {
    const res = await web().get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(html).toContain('<h2>Not Found</h2>');
    expect(html).toContain('<link rel="stylesheet" href="/css/rq.css">');
    expect((await web().get('/q/no_such_queue.txt')).status).toBe(404);
  });

  it('serves the stylesheet and the favicon', async () => {
    const css = await web().get('/css/rq.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect((await web().get('/favicon.ico')).status).toBe(200);
  });

  it('gives a malformed JSON body a clear 400, and an oversized body 413', async () => {
    const bad = await web().request('/q/test/new_message', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"dest": ' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toMatch(/^400 - Bad JSON body: /);
    const big = await web().request('/q/test/new_message', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ dest: 'test', param1: 'x'.repeat(65 * 1024 * 1024) }),
    });
    expect(big.status).toBe(413);
    expect(await big.text()).toMatch(/^413 - Request body is over the limit of \d+ bytes/);
  });

  it('refuses a POST from another site, and lets same-origin browsers and plain clients through', async () => {
    const form = { mesg: JSON.stringify({ dest: 'test' }) };
    const post = (headers: Record<string, string>): Promise<Response> =>
      web().request('/q/test/new_message', { method: 'POST', headers, body: new URLSearchParams(form) });
    // same-site: a page on another port of this host (another local server) is another origin.
    for (const headers of [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'http://evil.example' }, { origin: 'null' }]) {
      const res = await post(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(await res.text()).toContain('A POST from another site is refused.');
    }
    expect((await post({ origin: web().base, 'sec-fetch-site': 'same-origin' })).status).toBe(200);
    expect((await post({})).status).toBe(200);
    expect((await web().get('/', { 'sec-fetch-site': 'cross-site' })).status).toBe(200);
  });

  it('answers a message too large for the queue socket with 413, and stays up', async () => {
    // 60 MB of form text that turns into more than 100 MB of RPC JSON (\u0001 is 6 bytes in JSON).
    const body = `mesg[dest]=test&mesg[param1]=${'%01'.repeat(20_000_000)}&x_format=html`;
    const res = await web().request('/q/test/new_message', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
    expect(res.status).toBe(413);
    expect(await res.text()).toMatch(/^413 - The create_message request is too large for the queue socket/);
    expect((await web().get('/q/test.txt')).status).toBe(200);
    // The web process did not die (rq-mgr would have restarted it).
    expect(await t().mgr('restarts')).toMatchObject({ web: 0 });
  });

  it('redirects to the root when back is not a plain local path', async () => {
    for (const back of ['http://evil.example/', '//evil.example/x', '/\\evil.example', '/a\r\nSet-Cookie: x=1', '/caf\u00e9']) {
      const res = await web().postForm('/q/test/adminoper', { pause: '1', back });
      expect(res.status, back).toBe(303);
      expect(res.headers.get('location'), back).toBe(`${web().base}/`);
    }
    const ok = await web().postForm('/q/test/adminoper', { resume: '1', back: '/q/test?state=que&page=2' });
    expect(ok.headers.get('location')).toBe(`${web().base}/q/test?state=que&page=2`);
  });

  it('gives a broken multipart body a clear 400, its temp file gone before the reply', async () => {
    const body = '--XX\r\nContent-Disposition: form-data; name="filedata"; filename="a.txt"\r\n\r\nhello';
    const res = await web().request('/q/test/20260101.0000.00.000.1/attach/new', {
      method: 'POST',
      headers: { 'content-type': 'multipart/form-data; boundary=XX' },
      body,
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/^400 - Bad multipart body: /);
    expect(rackTemps(t())).toEqual([]);
  });
});

describe('relative_root', () => {
  const { web } = sharedInstall({ setup: (t) => t.addQueue({ name: 'test', script: 'done.sh' }), config: { relative_root: '/therq' } });

  it('serves only under relative_root, with any number of slashes per slash', async () => {
    const outside = await web().get('/');
    expect(outside.status).toBe(404);
    expect(outside.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await outside.text()).toBe('Not Found: /');
    for (const p of ['/therq', '/therq/']) expect(await (await web().get(p)).text(), p).toMatch(/QUEUEMGR:.*OPERATIONAL/);
    const q = await web().get('//therq//q.txt');
    expect(q.status).toBe(200);
    expect(await q.text()).toBe('/therq/q/test.txt');
    expect(await (await web().get('/therq/css/rq.css')).text()).toContain('rq dashboard');
  });
});

describe('basic_auth', () => {
  const { web } = sharedInstall({ config: { basic_auth: { realm: 'ops', users: { ann: 's3cret' } } } });

  it('asks for Basic credentials on everything, static files included', async () => {
    const none = await web().get('/');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Basic realm="ops"');
    expect(await none.text()).toBe('');
    expect((await web().get('/css/rq.css')).status).toBe(401);
    const wrong = await web().get('/', { authorization: `Basic ${Buffer.from('ann:nope').toString('base64')}` });
    expect(wrong.status).toBe(401);
    const right = await web().get('/', { authorization: `Basic ${Buffer.from('ann:s3cret').toString('base64')}` });
    expect(right.status).toBe(200);
  });
});

describe('allowed_ips that the client does not match', () => {
  const { web } = sharedInstall({ setup: (t) => t.addQueue({ name: 'test' }), config: { allowed_ips: ['10.9.8.'] } });

  it('answers 403 on every route, static files included', async () => {
    const res = await web().get('/');
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('<title>403 Forbidden</title>');
    for (const p of ['/css/rq.css', '/q.json', '/q.txt', '/q/test', '/q/test.txt', '/search?name=test']) {
      expect((await web().get(p)).status, p).toBe(403);
    }
  });
});

describe('allowed_ips that the client matches', () => {
  const { web } = sharedInstall({ config: { allowed_ips: ['127.0.0.1'] } });

  it('serves the client', async () => {
    expect((await web().get('/')).status).toBe(200);
  });
});

describe('a malformed basic_auth', () => {
  const t = useTestRoot();

  it('keeps rq-mgr from starting, saying which key is wrong', async () => {
    await t().usePort();
    t().setMainConfig({ basic_auth: 'ann:s3cret' });
    const r = await t().bin('rq-mgr', ['start']);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).toContain('"basic_auth" must be an object');
  });
});

describe('rq-mgr not running', () => {
  // The web process on its own (no IPC channel to an rq-mgr); queuemgr.pid names no live process.
  const { web } = sharedInstall({
    lone: true,
    setup: (t) => {
      t.addQueue({ name: 'test' });
      fs.writeFileSync(path.join(t.root, 'config/queuemgr.pid'), '999999999\n');
    },
  });

  it('answers 503 - QueueMgr not running on routes, while static files still serve', async () => {
    const res = await web().get('/');
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await res.text()).toBe('503 - QueueMgr not running');
    expect((await web().get('/q/test.txt')).status).toBe(503);
    expect((await web().get('/css/rq.css')).status).toBe(200);
  });
});
