/**
 * The lmstfy front door (docs/doors/lmstfy.md) over real HTTP, against a running rq: rq-mgr,
 * the web process that serves the door, and one queue process per lmstfy queue. The
 * tests of a describe share one install (each uses queues of its own); the root is
 * removed when they all pass and kept, its path printed, when one fails.
 *
 * lmstfy counts delays and TTRs in whole seconds: they are checked with ±1 s, by waiting for the
 * event (a blocking consume, or waitFor), never by a fixed sleep before an assertion.
 */
import fs from 'node:fs';
import path from 'node:path';
import { decodeTime, isValid as isUlid } from 'ulid';
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { parseLmstfySection } from '../../src/protocols/lmstfy-config.js';
import { waitFor, type TestRoot } from '../helpers/install.js';
import { sharedProtocols, startProtocols } from '../helpers/protocols.js';
import { rawRequest, type Web } from '../helpers/web.js';

const NS = 'test';
const TOKEN = 'tok-test-0123456789abcdef';
const OTHER_NS = 'other';
const OTHER_TOKEN = 'tok-other-0123456789abcdef';

interface Res {
  status: number;
  /** The JSON body, or null for none. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers;
}

interface CallOptions {
  /** The X-Token header; null sends none. @default TOKEN */
  token?: string | null;
  body?: string | Buffer;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** The admin account of the installs that use the token routes. */
const ADMIN = { admin: 'secret' };

/** An HTTP Basic `authorization` header. */
const basic = (user: string, pass: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });

/** An HTTP client of one lmstfy listener. */
class Lmstfy {
  readonly base: string;
  /** Headers sent with every call (an admin's credentials). */
  private readonly always: Record<string, string>;
  constructor(base: string, always: Record<string, string> = {}) {
    this.base = base;
    this.always = always;
  }

  async call(method: string, pathname: string, o: CallOptions = {}): Promise<Res> {
    const headers: Record<string, string> = { ...this.always, ...o.headers };
    const token = o.token === undefined ? TOKEN : o.token;
    if (token !== null) headers['X-Token'] = token;
    const res = await fetch(this.base + pathname, { method, headers, ...(o.body !== undefined ? { body: o.body } : {}), ...(o.signal ? { signal: o.signal } : {}) });
    const text = await res.text();
    return { status: res.status, body: text === '' ? null : JSON.parse(text), headers: res.headers };
  }

  /** Publish; returns the job id (expects 201). */
  async publish(q: string, body: string | Buffer, query = ''): Promise<string> {
    const r = await this.call('PUT', `/api/${NS}/${q}${query === '' ? '' : `?${query}`}`, { body });
    expect(r, JSON.stringify(r.body)).toMatchObject({ status: 201, body: { msg: 'published' } });
    return r.body.job_id as string;
  }

  consume(queues: string, query = ''): Promise<Res> {
    return this.call('GET', `/api/${NS}/${queues}${query === '' ? '' : `?${query}`}`);
  }

  ack(q: string, id: string): Promise<Res> {
    return this.call('DELETE', `/api/${NS}/${q}/job/${id}`);
  }

  peek(q: string, id?: string): Promise<Res> {
    return this.call('GET', id === undefined ? `/api/${NS}/${q}/peek` : `/api/${NS}/${q}/job/${id}`);
  }

  async size(q: string): Promise<number> {
    const r = await this.call('GET', `/api/${NS}/${q}/size`, { token: null });
    expect(r.status).toBe(200);
    return r.body.size as number;
  }

  async deadLetter(q: string): Promise<{ size: number; head: string }> {
    const r = await this.call('GET', `/api/${NS}/${q}/deadletter`);
    expect(r.status).toBe(200);
    return { size: r.body.deadletter_size, head: r.body.deadletter_head };
  }
}

const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');
const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

let serial = 0;
/** A queue name no other test uses. */
const fresh = (stem = 'q'): string => `${stem}${++serial}`;

/**
 * One install for the calling describe: rq-mgr, the web and the lmstfy door with this
 * section (tokens of NS and OTHER_NS by default).
 */
function lmstfyInstall(
  section: Record<string, unknown> = { tokens: { [NS]: [TOKEN], [OTHER_NS]: [OTHER_TOKEN] } },
  always: Record<string, string> = {},
): { t: () => TestRoot; api: () => Lmstfy; port: () => number; web: () => Web } {
  const doors = sharedProtocols({ lmstfy: section });
  return { t: doors.t, api: () => new Lmstfy(doors.base('lmstfy'), always), port: () => doors.port('lmstfy'), web: doors.web };
}

/** The ms a promise took, with its value. */
async function timed<T>(p: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const at = Date.now();
  const value = await p();
  return { ms: Date.now() - at, value };
}

describe('lmstfy: transport, names, tokens', () => {
  const { api } = lmstfyInstall();

  it('puts a fresh ULID in X-Request-ID on every reply, errors and 204s included', async () => {
    const q = fresh();
    const replies = [
      await api().call('PUT', `/api/${NS}/${q}`, { body: 'x' }),
      await api().consume(q),
      await api().consume(q),
      await api().ack(q, '01ARZ3NDEKTSV4RRFFQ69G5FAV'),
      await api().call('GET', '/nowhere'),
      await api().call('GET', `/api/${NS}/${q}/peek`, { token: 'wrong' }),
      await api().call('GET', '/version'),
    ];
    expect(replies.map((r) => r.status)).toEqual([201, 200, 404, 204, 404, 401, 200]);
    const ids = replies.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(isUlid(id!), String(id)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(replies[0]!.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(replies[3]!.body).toBeNull();
  });

  it('answers unknown routes and known paths with the wrong method 404 api not found', async () => {
    for (const [method, p] of [
      ['GET', '/'],
      ['GET', '/api'],
      ['GET', `/api/${NS}`],
      ['POST', `/api/${NS}/q`],
      ['PUT', `/api/${NS}/q/peek`],
      ['GET', `/api/${NS}/q/bulk`],
      ['POST', `/api/${NS}/q/job/01ARZ3NDEKTSV4RRFFQ69G5FAV`],
      ['GET', `/api/${NS}/q/a/b/c`],
      ['POST', '/metrics'],
      ['PATCH', `/token/${NS}/${TOKEN}/limit`],
      ['PUT', '/accesslog'],
    ] as const) {
      const r = await api().call(method, p);
      expect({ method, p, status: r.status, body: r.body }).toEqual({ method, p, status: 404, body: { error: 'api not found' } });
    }
  });

  it('keeps the token, limiter and access log switch routes off without accounts, saying how to turn them on; /version, /info, /pools, /metrics and GET /accesslog stay open', async () => {
    const off = { status: 403, body: { error: expect.stringMatching(/"accounts".*"auth": false/) } };
    const custom = 'my-own-token-0123456789';
    expect(await api().call('GET', `/token/${NS}`, { token: null })).toMatchObject(off);
    expect(await api().call('POST', `/token/${NS}?description=mine`, { token: null })).toMatchObject(off);
    expect(await api().call('POST', `/token/fresh?description=mine&token=${custom}`, { token: null })).toMatchObject(off);
    expect(await api().call('DELETE', `/token/${NS}/${TOKEN}`, { token: null })).toMatchObject(off);
    expect(await api().call('POST', `/token/${NS}/${TOKEN}/limit`, { token: null, body: '{"write":1,"interval":60}' })).toMatchObject(off);
    expect(await api().call('GET', '/limits', { token: null })).toMatchObject(off);
    expect(await api().call('POST', '/accesslog?status=enable', { token: null })).toMatchObject(off);
    // Nothing changed: the config's token still works, and the custom one was not minted.
    expect(await api().call('GET', `/api/${NS}/q/peek`)).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await api().call('GET', `/api/fresh/q/peek`, { token: custom })).toMatchObject({ status: 401, body: { error: 'invalid token' } });
    for (const p of ['/version', '/info', '/pools']) expect((await api().call('GET', p, { token: null })).status, p).toBe(200);
    expect(await api().call('GET', '/accesslog', { token: null })).toMatchObject({ status: 200, body: { status: 'disabled' } });
    expect((await fetch(`${api().base}/metrics`)).status).toBe(200);
  });

  it('checks names before the token, in lmstfy\'s order, with lmstfy\'s texts', async () => {
    const long = 'a'.repeat(256);
    const cases: Array<[string, string, string]> = [
      [long, 'q', 'namespace or queue name too long'],
      [NS, long, 'namespace or queue name too long'],
      ['a'.repeat(200), 'b'.repeat(60), 'namespace or queue name too long'], // `<ns>.<q>` would be 261
      ['bad.ns', 'q', 'namespace name contains forbidden characters'],
      ['bad%20ns', 'q', 'namespace name contains forbidden characters'],
      [NS, '_q', 'queue name contains forbidden characters'],
      [NS, 'q.x', 'queue name contains forbidden characters'],
      [NS, 'q%24', 'queue name contains forbidden characters'],
    ];
    for (const [ns, q, error] of cases) {
      for (const [method, suffix] of [
        ['PUT', ''],
        ['GET', '/peek'],
        ['GET', '/size'],
        ['DELETE', '/job/01ARZ3NDEKTSV4RRFFQ69G5FAV'],
        ['GET', '/deadletter/size'],
      ] as const) {
        const r = await api().call(method, `/api/${ns}/${q}${suffix}`, { token: null });
        expect({ ns: ns.slice(0, 12), q: q.slice(0, 12), suffix, status: r.status, body: r.body }).toEqual({
          ns: ns.slice(0, 12),
          q: q.slice(0, 12),
          suffix,
          status: 400,
          body: { error },
        });
      }
    }
  });

  it('checks consume names by its own rules: commas, leading _, no length limit on the queue part', async () => {
    expect(await api().call('GET', `/api/bad.ns/q`, { token: null })).toMatchObject({ status: 400, body: { error: 'namespace name contains forbidden characters' } });
    expect(await api().call('GET', `/api/${'n'.repeat(256)}/q`, { token: null })).toMatchObject({ status: 400, body: { error: 'namespace or queue name too long' } });
    expect(await api().call('GET', `/api/${NS}/q.x`, { token: null })).toMatchObject({ status: 400, body: { error: 'queue name contains forbidden characters' } });
    // Leading `_` and a long queue part are fine: no job there.
    expect(await api().consume('_private')).toMatchObject({ status: 404, body: { msg: 'no job available' } });
    expect(await api().consume(`${'x'.repeat(300)},_p`)).toMatchObject({ status: 404, body: { msg: 'no job available' } });
    expect(await api().consume(',,')).toMatchObject({ status: 400, body: { error: 'invalid queue name(s)' } });
  });

  it('takes the token from X-Token, else the token parameter, with an optional pool prefix', async () => {
    const q = fresh();
    const p = `/api/${NS}/${q}/peek`;
    expect(await api().call('GET', p, { token: null })).toMatchObject({ status: 401, body: { error: 'token not found' } });
    expect(await api().call('GET', p, { token: '' })).toMatchObject({ status: 401, body: { error: 'token not found' } });
    expect(await api().call('GET', p, { token: 'default:' })).toMatchObject({ status: 401, body: { error: 'token not found' } });
    expect(await api().call('GET', p, { token: 'nope' })).toMatchObject({ status: 401, body: { error: 'invalid token' } });
    expect(await api().call('GET', p, { token: OTHER_TOKEN })).toMatchObject({ status: 401, body: { error: 'invalid token' } });
    expect(await api().call('GET', `${p}?token=${TOKEN}`, { token: null })).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await api().call('GET', `${p}?token=nope`, { token: TOKEN })).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await api().call('GET', p, { token: `default:${TOKEN}` })).toMatchObject({ status: 404 });
    expect(await api().call('GET', p, { token: `other:${TOKEN}` })).toMatchObject({ status: 404, body: { error: 'pool not found' } });
    expect(await api().call('GET', `${p}?token=other:x`, { token: null })).toMatchObject({ status: 404, body: { error: 'pool not found' } });
    // The other namespace's token works there.
    expect(await api().call('GET', `/api/${OTHER_NS}/${q}/peek`, { token: OTHER_TOKEN })).toMatchObject({ status: 404, body: { error: 'job not found' } });
  });

  it('serves the two size routes without a token, but still checks the pool', async () => {
    const q = fresh();
    expect(await api().call('GET', `/api/${NS}/${q}/size`, { token: null })).toMatchObject({ status: 200, body: { namespace: NS, queue: q, size: 0 } });
    expect(await api().call('GET', `/api/${NS}/${q}/deadletter/size`, { token: null })).toMatchObject({ status: 200, body: { namespace: NS, queue: q, size: 0 } });
    expect(await api().call('GET', `/api/${NS}/${q}/size`, { token: 'x:y' })).toMatchObject({ status: 404, body: { error: 'pool not found' } });
    for (const [method, suffix] of [
      ['PUT', ''],
      ['GET', ''],
      ['DELETE', ''],
      ['PUT', '/bulk'],
      ['GET', '/peek'],
      ['GET', '/job/01ARZ3NDEKTSV4RRFFQ69G5FAV'],
      ['PUT', '/job/01ARZ3NDEKTSV4RRFFQ69G5FAV'],
      ['DELETE', '/job/01ARZ3NDEKTSV4RRFFQ69G5FAV'],
      ['GET', '/deadletter'],
      ['PUT', '/deadletter'],
      ['DELETE', '/deadletter'],
    ] as const) {
      const r = await api().call(method, `/api/${NS}/${q}${suffix}`, { token: null, ...(method === 'PUT' ? { body: '[1]' } : {}) });
      expect({ method, suffix, status: r.status, body: r.body }).toEqual({ method, suffix, status: 401, body: { error: 'token not found' } });
    }
  });
});

describe('lmstfy: publish, consume, ack, peek', () => {
  const { t, api, port } = lmstfyInstall();

  it('publishes a job and consumes it with lmstfy\'s job object', async () => {
    const q = fresh();
    const before = Date.now();
    const id = await api().publish(q, 'hey new job', 'tries=3&delay=0');
    expect(isUlid(id)).toBe(true);
    expect(id).toBe(id.toUpperCase());
    expect(decodeTime(id)).toBeGreaterThanOrEqual(before - 5);
    expect(await api().size(q)).toBe(1);
    const r = await api().consume(q, 'ttr=30&timeout=10');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ msg: 'new job', namespace: NS, queue: q, job_id: id, data: b64('hey new job'), remain_tries: 2 });
    expect(r.body.ttl).toBeGreaterThanOrEqual(86_399);
    expect(r.body.ttl).toBeLessThanOrEqual(86_400);
    expect(Object.keys(r.body).sort()).toEqual(['data', 'elapsed_ms', 'job_id', 'msg', 'namespace', 'queue', 'remain_tries', 'ttl']);
    expect(r.body.elapsed_ms).toBeGreaterThanOrEqual(0);
    expect(r.body.elapsed_ms).toBeLessThan(Date.now() - before + 5);
    expect(await api().size(q)).toBe(0);
    expect(await api().ack(q, id)).toMatchObject({ status: 204, body: null });
    expect(await api().consume(q)).toMatchObject({ status: 404, body: { msg: 'no job available' } });
  });

  it('keeps the body byte for byte (binary, empty, exactly 65,535 bytes) and refuses 65,536 with 413', async () => {
    const q = fresh();
    const binary = Buffer.from([0, 1, 2, 255, 254, 0x80, 10, 13]);
    const max = Buffer.alloc(65_535, 'z');
    const ids = [await api().publish(q, binary), await api().publish(q, ''), await api().publish(q, max)];
    for (const [i, want] of [binary, Buffer.alloc(0), max].entries()) {
      const r = await api().consume(q);
      expect(r.body.job_id).toBe(ids[i]);
      expect(Buffer.from(r.body.data, 'base64').equals(want)).toBe(true);
    }
    expect(await api().call('PUT', `/api/${NS}/${q}`, { body: Buffer.alloc(65_536, 'z') })).toMatchObject({ status: 413, body: { error: 'body too large' } });
    // Without a Content-Length (chunked), found while reading.
    const chunk = 'y'.repeat(40_000);
    const reply = await rawRequest(
      port(),
      `PUT /api/${NS}/${q} HTTP/1.1\r\nHost: x\r\nX-Token: ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${chunk.length.toString(16)}\r\n${chunk}\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
    expect(reply).toContain('{"error":"body too large"}');
    expect(reply).toMatch(/X-Request-ID: [0-9A-Z]{26}\r\n/i);
    expect(await api().size(q)).toBe(0);
  });

  it('checks the publish query in lmstfy\'s order with lmstfy\'s texts', async () => {
    const q = fresh();
    const cases: Array<[string, number, string]> = [
      ['delay=-1', 400, 'invalid delay'],
      ['delay=abc', 400, 'invalid delay'],
      ['delay=', 400, 'invalid delay'],
      ['delay=4294967296', 400, 'invalid delay'],
      ['delay=1.5', 400, 'invalid delay'],
      ['delay=x&ttl=x', 400, 'invalid delay'],
      ['ttl=-1', 400, 'invalid ttl'],
      ['ttl=4294967296', 400, 'invalid ttl'],
      ['ttl=x&tries=0', 400, 'invalid ttl'],
      ['delay=10&ttl=5', 400, 'ttl is shorter than delay'],
      ['delay=10&ttl=5&tries=x', 400, 'ttl is shorter than delay'],
      ['tries=65536', 400, 'invalid tries'],
      ['tries=-1', 400, 'invalid tries'],
      ['tries=', 400, 'invalid tries'],
      ['tries=0', 400, "tries shouldn't be zero"],
    ];
    for (const [query, status, error] of cases) {
      const r = await api().call('PUT', `/api/${NS}/${q}?${query}`, { body: Buffer.alloc(70_000) });
      expect({ query, status: r.status, body: r.body }).toEqual({ query, status, body: { error } });
    }
    // The limits themselves are fine; ttl 0 never expires; unknown keys (freeze_tries) are ignored.
    await api().publish(q, 'a', 'delay=0&ttl=4294967295&tries=65535&freeze_tries=9');
    await api().publish(q, 'b', 'ttl=0');
    await api().publish(q, 'c', 'ttl=10&delay=10');
    expect((await api().consume(q)).body).toMatchObject({ ttl: 4294967295, remain_tries: 65534 });
    expect((await api().consume(q)).body).toMatchObject({ ttl: 0, remain_tries: 0 });
  });

  it('acknowledges with 204 whatever the id: unknown, malformed, or of another queue (which keeps its job)', async () => {
    const q = fresh();
    const elsewhere = fresh();
    const id = await api().publish(elsewhere, 'keep me');
    expect(await api().ack(q, id)).toMatchObject({ status: 204, body: null });
    expect(await api().ack(q, '01ARZ3NDEKTSV4RRFFQ69G5FAV')).toMatchObject({ status: 204 });
    expect(await api().ack(q, 'not-an-id')).toMatchObject({ status: 204 });
    expect(await api().ack(elsewhere, 'not-an-id')).toMatchObject({ status: 204 });
    expect(await api().peek(elsewhere, id)).toMatchObject({ status: 200, body: { job_id: id } });
    // Ids are upper case; a lower-case one names the same job.
    expect(await api().peek(elsewhere, id.toLowerCase())).toMatchObject({ status: 200, body: { job_id: id } });
    // Acked twice: still 204; acked while ready: it is gone for good.
    expect(await api().ack(elsewhere, id.toLowerCase())).toMatchObject({ status: 204 });
    expect(await api().ack(elsewhere, id)).toMatchObject({ status: 204 });
    expect(await api().peek(elsewhere, id)).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await api().size(elsewhere)).toBe(0);
    expect(await api().consume(elsewhere)).toMatchObject({ status: 404 });
  });

  it('peeks at the head of the ready queue without consuming it, and at one job in any live state', async () => {
    const q = fresh();
    expect(await api().peek(q)).toMatchObject({ status: 404, body: { error: 'job not found' } });
    const first = await api().publish(q, 'one', 'tries=3');
    const second = await api().publish(q, 'two');
    const delayed = await api().publish(q, 'later', 'delay=600');
    for (let i = 0; i < 2; i++) {
      const r = await api().peek(q);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ namespace: NS, queue: q, job_id: first, data: b64('one'), remain_tries: 3 });
      expect(r.body.ttl).toBeGreaterThanOrEqual(86_399);
      expect(r.body).not.toHaveProperty('msg');
    }
    expect(await api().size(q)).toBe(2);
    expect((await api().peek(q, delayed)).body).toMatchObject({ job_id: delayed, data: b64('later'), remain_tries: 1 });
    expect((await api().consume(q, 'ttr=600')).body.job_id).toBe(first);
    // In flight: peek by id shows it with the tries left; the head is the next one.
    expect((await api().peek(q, first)).body).toMatchObject({ job_id: first, remain_tries: 2 });
    expect((await api().peek(q)).body.job_id).toBe(second);
    // Another queue's job, an unknown id, a malformed one: 404.
    expect(await api().peek(fresh(), first)).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await api().peek(q, '01ARZ3NDEKTSV4RRFFQ69G5FAV')).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await api().peek(q, 'garbage')).toMatchObject({ status: 404, body: { error: 'job not found' } });
    await api().ack(q, first);
    expect(await api().peek(q, first)).toMatchObject({ status: 404, body: { error: 'job not found' } });
  });

  it('republishes: checks first (a 400 keeps the old job), then acks the old job and publishes a new one', async () => {
    const q = fresh();
    const old = await api().publish(q, 'first try', 'tries=2');
    expect((await api().consume(q, 'ttr=600')).body.job_id).toBe(old);
    for (const [query, error] of [
      ['delay=x', 'invalid delay'],
      ['ttl=1&delay=5', 'ttl is shorter than delay'],
      ['tries=0', "tries shouldn't be zero"],
    ]) {
      expect(await api().call('PUT', `/api/${NS}/${q}/job/${old}?${query}`, { body: 'x' })).toMatchObject({ status: 400, body: { error } });
    }
    expect(await api().call('PUT', `/api/${NS}/${q}/job/${old}`, { body: Buffer.alloc(65_536) })).toMatchObject({ status: 413, body: { error: 'body too large' } });
    expect(await api().peek(q, old)).toMatchObject({ status: 200, body: { job_id: old } });
    const r = await api().call('PUT', `/api/${NS}/${q}/job/${old}?tries=5`, { body: 'second try' });
    expect(r).toMatchObject({ status: 201, body: { msg: 'published' } });
    const renewed = r.body.job_id as string;
    expect(isUlid(renewed)).toBe(true);
    expect(renewed).not.toBe(old);
    expect(await api().peek(q, old)).toMatchObject({ status: 404 });
    expect((await api().consume(q)).body).toMatchObject({ job_id: renewed, data: b64('second try'), remain_tries: 4 });
    // An unknown old id: nothing to ack, the new job is published all the same.
    expect(await api().call('PUT', `/api/${NS}/${q}/job/01ARZ3NDEKTSV4RRFFQ69G5FAV`, { body: 'third' })).toMatchObject({ status: 201 });
  });

  it('bulk-publishes the raw JSON text of each element, in order', async () => {
    const q = fresh();
    const body = '[ {"a": 1,  "b" : [1, {"c":"]"}]} ,"hello, neo",\n 42 , null,true,"esc\\"aped\\\\" , [] ]';
    const r = await api().call('PUT', `/api/${NS}/${q}/bulk?tries=2`, { body });
    expect(r).toMatchObject({ status: 201, body: { msg: 'published' } });
    const ids = r.body.job_ids as string[];
    expect(ids).toHaveLength(7);
    const want = ['{"a": 1,  "b" : [1, {"c":"]"}]}', '"hello, neo"', '42', 'null', 'true', '"esc\\"aped\\\\"', '[]'];
    for (const [i, text] of want.entries()) {
      const job = await api().consume(q);
      expect(job.body).toMatchObject({ job_id: ids[i], remain_tries: 1 });
      expect(unb64(job.body.data)).toBe(text);
    }
    expect(unb64(b64('"hello, neo"'))).toHaveLength(12);
  });

  it('checks bulk bodies in lmstfy\'s order', async () => {
    const q = fresh();
    const big = `"${'x'.repeat(65_534)}"`; // 65,536 bytes of JSON text
    const cases: Array<[string, string, number, string]> = [
      ['delay=x', '[1]', 400, 'invalid delay'],
      ['', '{"a":1}', 400, 'request body should be an array of objects'],
      ['', '"[1]"', 400, 'request body should be an array of objects'],
      ['', '[1,', 400, 'request body should be an array of objects'],
      ['', '', 400, 'request body should be an array of objects'],
      ['', 'null', 400, 'request body should be an array of objects'],
      ['', '[]', 400, 'no jobs'],
      ['', ` [ ] `, 400, 'no jobs'],
      ['', JSON.stringify(Array.from({ length: 65 }, (_, i) => i)), 400, 'too many jobs'],
      ['', `[1, ${big}]`, 413, 'job too large'],
      ['', `[${Array.from({ length: 65 }, () => big).join(',')}]`, 400, 'too many jobs'],
    ];
    for (const [query, body, status, error] of cases) {
      const r = await api().call('PUT', `/api/${NS}/${q}/bulk?${query}`, { body });
      expect({ body: body.slice(0, 20), status: r.status, reply: r.body }).toEqual({ body: body.slice(0, 20), status, reply: { error } });
    }
    // 64 jobs of exactly 65,535 bytes each are fine.
    const max = `"${'x'.repeat(65_533)}"`;
    const ok = await api().call('PUT', `/api/${NS}/${q}/bulk`, { body: `[${Array.from({ length: 64 }, () => max).join(',')}]` });
    expect(ok.status).toBe(201);
    expect(ok.body.job_ids).toHaveLength(64);
    expect(await api().size(q)).toBe(64);
  });

  it('checks the consume query in lmstfy\'s order', async () => {
    const q = fresh();
    for (const [query, error] of [
      ['ttr=-1', 'invalid ttr'],
      ['ttr=4294967296', 'invalid ttr'],
      ['ttr=x&timeout=x', 'invalid ttr'],
      ['timeout=x', 'invalid timeout'],
      ['timeout=-5', 'invalid timeout'],
      ['timeout=x&count=0', 'invalid timeout'],
      ['count=0', 'invalid count'],
      ['count=101', 'invalid count'],
      ['count=', 'invalid count'],
    ]) {
      const r = await api().consume(q, query);
      expect({ query, status: r.status, body: r.body }).toEqual({ query, status: 400, body: { error } });
    }
    const r = await api().consume(',', 'ttr=x');
    expect(r).toMatchObject({ status: 400, body: { error: 'invalid ttr' } });
  });

  it('consumes a batch with count > 1 as an array (even of one), across queues in listed order', async () => {
    const [q1, q2] = [fresh(), fresh()];
    expect(await api().consume(q1, 'count=5')).toMatchObject({ status: 404, body: { msg: 'no job available' } });
    const a = await api().publish(q1, 'a');
    const r1 = await api().consume(q1, 'count=5');
    expect(r1.status).toBe(200);
    expect(r1.body).toEqual([expect.objectContaining({ msg: 'new job', job_id: a, queue: q1 })]);
    const b = await api().publish(q2, 'b');
    const c = await api().publish(q2, 'c');
    const d = await api().publish(q1, 'd');
    const e = await api().publish(q2, 'e');
    const r2 = await api().consume(`${q1},${q2}`, 'count=3');
    expect(r2.body.map((j: { job_id: string; queue: string }) => [j.queue, j.job_id])).toEqual([
      [q1, d],
      [q2, b],
      [q2, c],
    ]);
    expect((await api().consume(`${q1},${q2}`, 'count=100')).body.map((j: { job_id: string }) => j.job_id)).toEqual([e]);
    // count=1 is an object, not an array.
    await api().publish(q2, 'f');
    expect(Array.isArray((await api().consume(`${q1},${q2}`, 'count=1')).body)).toBe(false);
  });

  it('gives the first listed queue with a ready job (listed order is the priority)', async () => {
    const [q1, q2, q3] = [fresh(), fresh(), fresh()];
    const in3 = await api().publish(q3, 'three');
    const in2 = await api().publish(q2, 'two');
    expect((await api().consume(`${q1},${q2},${q3}`)).body).toMatchObject({ queue: q2, job_id: in2 });
    expect((await api().consume(`${q1},${q2},${q3}`, 'timeout=5')).body).toMatchObject({ queue: q3, job_id: in3 });
    // Duplicates and empty parts are dropped.
    const again = await api().publish(q2, 'again');
    expect((await api().consume(`,${q1},,${q1},${q2},`)).body).toMatchObject({ queue: q2, job_id: again });
  });

  it('shows an RQ-native message (no payload) with its params as data, and acks it by its job id', async () => {
    const q = fresh();
    await api().publish(q, 'makes the queue');
    await api().consume(q).then((r) => api().ack(q, r.body.job_id));
    await t().send(`${NS}.${q}`, { param1: 'p1', param2: 'p2' });
    const r = await api().consume(q);
    expect(r.status).toBe(200);
    expect(JSON.parse(unb64(r.body.data))).toMatchObject({ param1: 'p1', param2: 'p2' });
    expect(r.body.elapsed_ms).toBeGreaterThanOrEqual(0);
    expect(r.body.elapsed_ms).toBeLessThan(60_000);
    expect(await api().peek(q, r.body.job_id)).toMatchObject({ status: 200 });
    expect(await api().ack(q, r.body.job_id)).toMatchObject({ status: 204 });
    expect(await api().peek(q, r.body.job_id)).toMatchObject({ status: 404 });
  });
});

describe('lmstfy: size, destroy, delays, TTL, TTR, dead letter', () => {
  const { api } = lmstfyInstall();

  it('counts only ready jobs in size; an unknown queue has size 0', async () => {
    const q = fresh();
    expect(await api().size(fresh())).toBe(0);
    await api().publish(q, 'ready');
    await api().publish(q, 'delayed', 'delay=600');
    const flying = await api().publish(q, 'flying');
    await api().publish(q, 'ready too');
    await api().call('PUT', `/api/${NS}/${q}/job/${flying}`, { body: 'replaced' }); // acks `flying`, adds one
    expect(await api().size(q)).toBe(3);
    await api().consume(q, 'ttr=600');
    expect(await api().size(q)).toBe(2);
  });

  it('makes a delayed job ready after its delay (±1 s), not before', async () => {
    const q = fresh();
    const id = await api().publish(q, 'later', 'delay=2');
    const at = decodeTime(id);
    expect(await api().size(q)).toBe(0);
    expect(await api().consume(q)).toMatchObject({ status: 404 });
    expect(await api().peek(q)).toMatchObject({ status: 404 });
    const { value: r } = await timed(() => api().consume(q, 'timeout=10'));
    const readyAfter = Date.now() - at;
    expect(r.body).toMatchObject({ job_id: id, data: b64('later') });
    expect(readyAfter).toBeGreaterThanOrEqual(1000);
    expect(readyAfter).toBeLessThanOrEqual(3000 + 500);
    expect(r.body.elapsed_ms).toBeGreaterThanOrEqual(1000);
    // The TTL counts from publish, delay included.
    expect(r.body.ttl).toBeGreaterThanOrEqual(86_396);
    expect(r.body.ttl).toBeLessThanOrEqual(86_399);
  });

  it('destroys only the ready jobs: delayed, in-flight and dead ones stay', async () => {
    const q = fresh();
    const dead = await api().publish(q, 'dead', 'tries=1');
    expect((await api().consume(q, 'ttr=0')).body.job_id).toBe(dead);
    await waitFor(async () => (await api().deadLetter(q)).size === 1, 5000, 'the dead letter');
    const flying = await api().publish(q, 'flying');
    expect((await api().consume(q, 'ttr=600')).body.job_id).toBe(flying);
    const ready = [await api().publish(q, 'r1'), await api().publish(q, 'r2')];
    const delayed = await api().publish(q, 'delayed', 'delay=2');
    expect(await api().size(q)).toBe(2);
    expect(await api().call('DELETE', `/api/${NS}/${q}`)).toMatchObject({ status: 204, body: null });
    expect(await api().size(q)).toBe(0);
    for (const id of ready) expect(await api().peek(q, id)).toMatchObject({ status: 404 });
    expect(await api().peek(q, flying)).toMatchObject({ status: 200 });
    expect(await api().peek(q, delayed)).toMatchObject({ status: 200 });
    expect(await api().deadLetter(q)).toEqual({ size: 1, head: dead });
    // The delayed job becomes ready as usual.
    expect((await api().consume(q, 'timeout=10')).body.job_id).toBe(delayed);
    // Destroying an unknown queue: 204.
    expect(await api().call('DELETE', `/api/${NS}/${fresh()}`)).toMatchObject({ status: 204 });
  });

  it('removes a job whose TTL ran out, ready or in flight, and never dead-letters it', async () => {
    const q = fresh();
    const ready = await api().publish(q, 'short', 'ttl=1');
    const r = await api().consume(q, 'ttr=600');
    expect(r.body.job_id).toBe(ready);
    expect(r.body.ttl).toBeLessThanOrEqual(1);
    const waiting = await api().publish(q, 'short too', 'ttl=1');
    expect(await api().size(q)).toBe(1);
    await waitFor(async () => (await api().size(q)) === 0, 4000, 'the TTL of the ready job');
    await waitFor(async () => (await api().peek(q, ready)).status === 404, 4000, 'the TTL of the job in flight');
    expect(await api().peek(q, waiting)).toMatchObject({ status: 404 });
    expect(await api().consume(q)).toMatchObject({ status: 404 });
    expect(await api().deadLetter(q)).toEqual({ size: 0, head: '' });
    // ack of the expired job: still 204.
    expect(await api().ack(q, ready)).toMatchObject({ status: 204 });
  });

  it('redelivers a job whose TTR ran out (±1 s), same id, tries falling, to the tail', async () => {
    const q = fresh();
    const id = await api().publish(q, 'retry me', 'tries=3');
    const leasedAt = Date.now();
    expect((await api().consume(q, 'ttr=1')).body).toMatchObject({ job_id: id, remain_tries: 2 });
    // In flight: invisible to consume and peek.
    expect(await api().consume(q)).toMatchObject({ status: 404 });
    expect(await api().peek(q)).toMatchObject({ status: 404 });
    // A blocking consume wakes on the TTR requeue.
    const again = await api().consume(q, 'ttr=1&timeout=10');
    const after = Date.now() - leasedAt;
    expect(again.body).toMatchObject({ job_id: id, data: b64('retry me'), remain_tries: 1 });
    expect(after).toBeLessThanOrEqual(2000 + 500);
    expect(again.body.elapsed_ms).toBeGreaterThanOrEqual(after - 50);
    // Requeued to the tail: behind a job that became ready while it was in flight.
    const behind = await api().publish(q, 'ready first');
    await waitFor(async () => (await api().size(q)) === 2, 4000, 'the second TTR end');
    expect((await api().consume(q, 'ttr=600')).body.job_id).toBe(behind);
    expect((await api().consume(q, 'ttr=600')).body).toMatchObject({ job_id: id, remain_tries: 0 });
  });

  it('dead-letters a job out of tries, respawns it with 1 try, and consumes it again', async () => {
    const q = fresh();
    const id = await api().publish(q, 'doomed', 'tries=2&ttl=600');
    expect((await api().consume(q, 'ttr=1')).body).toMatchObject({ job_id: id, remain_tries: 1 });
    expect((await api().consume(q, 'ttr=1&timeout=10')).body).toMatchObject({ job_id: id, remain_tries: 0 });
    await waitFor(async () => (await api().deadLetter(q)).size === 1, 5000, 'the dead letter');
    expect(await api().call('GET', `/api/${NS}/${q}/deadletter`)).toMatchObject({
      status: 200,
      body: { namespace: NS, queue: q, deadletter_size: 1, deadletter_head: id },
    });
    expect(await api().call('GET', `/api/${NS}/${q}/deadletter/size`, { token: null })).toMatchObject({ status: 200, body: { namespace: NS, queue: q, size: 1 } });
    expect(await api().size(q)).toBe(0);
    expect(await api().consume(q)).toMatchObject({ status: 404 });
    // Dead: no TTL any more, still seen by id.
    expect((await api().peek(q, id)).body).toMatchObject({ job_id: id, ttl: 0, remain_tries: 0 });
    for (const query of ['limit=0', 'limit=-1', 'limit=x', 'limit=']) {
      expect(await api().call('PUT', `/api/${NS}/${q}/deadletter?${query}`)).toMatchObject({ status: 400, body: { error: 'invalid limit' } });
    }
    for (const query of ['ttl=-1', 'ttl=x', 'limit=x&ttl=x']) {
      const want = query.startsWith('limit') ? 'invalid limit' : 'invalid ttl';
      expect(await api().call('PUT', `/api/${NS}/${q}/deadletter?${query}`)).toMatchObject({ status: 400, body: { error: want } });
    }
    expect(await api().call('PUT', `/api/${NS}/${q}/deadletter?limit=10&ttl=0`)).toMatchObject({ status: 200, body: { msg: 'respawned', count: 1 } });
    expect(await api().deadLetter(q)).toEqual({ size: 0, head: '' });
    expect(await api().size(q)).toBe(1);
    const back = await api().consume(q, 'ttr=600');
    expect(back.body).toMatchObject({ job_id: id, data: b64('doomed'), remain_tries: 0, ttl: 0 });
    expect(await api().ack(q, id)).toMatchObject({ status: 204 });
    expect(await api().call('PUT', `/api/${NS}/${q}/deadletter`)).toMatchObject({ status: 200, body: { msg: 'respawned', count: 0 } });
    expect(await api().call('PUT', `/api/${NS}/${fresh()}/deadletter`)).toMatchObject({ status: 200, body: { msg: 'respawned', count: 0 } });
  });

  it('respawns with the default TTL, oldest first, to the tail; a blocking consume wakes on it', async () => {
    const q = fresh();
    const ids = [await api().publish(q, 'd1'), await api().publish(q, 'd2')];
    for (const id of ids) {
      expect((await api().consume(q, 'ttr=0')).body.job_id).toBe(id);
      await waitFor(async () => (await api().peek(q, id)).status === 200 && (await api().deadLetter(q)).size === ids.indexOf(id) + 1, 5000, 'dead');
    }
    expect((await api().deadLetter(q)).head).toBe(ids[0]);
    const waiting = api().consume(q, 'timeout=10&ttr=600');
    expect(await api().call('PUT', `/api/${NS}/${q}/deadletter`)).toMatchObject({ status: 200, body: { count: 1 } });
    expect((await waiting).body).toMatchObject({ job_id: ids[0], remain_tries: 0 });
    expect((await api().peek(q, ids[0])).body.ttl).toBeGreaterThanOrEqual(86_399);
    expect(await api().deadLetter(q)).toEqual({ size: 1, head: ids[1] });
  });

  it('deletes dead jobs for good, oldest first, always 204', async () => {
    const q = fresh();
    const ids = [await api().publish(q, 'x1'), await api().publish(q, 'x2'), await api().publish(q, 'x3')];
    for (const id of ids) expect((await api().consume(q, 'ttr=0')).body.job_id).toBe(id);
    await waitFor(async () => (await api().deadLetter(q)).size === 3, 5000, 'three dead letters');
    for (const query of ['limit=0', 'limit=x']) {
      expect(await api().call('DELETE', `/api/${NS}/${q}/deadletter?${query}`)).toMatchObject({ status: 400, body: { error: 'invalid limit' } });
    }
    expect(await api().call('DELETE', `/api/${NS}/${q}/deadletter`)).toMatchObject({ status: 204, body: null });
    expect(await api().deadLetter(q)).toEqual({ size: 2, head: ids[1] });
    expect(await api().peek(q, ids[0])).toMatchObject({ status: 404 });
    expect(await api().call('DELETE', `/api/${NS}/${q}/deadletter?limit=5`)).toMatchObject({ status: 204 });
    expect(await api().deadLetter(q)).toEqual({ size: 0, head: '' });
    expect(await api().call('DELETE', `/api/${NS}/${q}/deadletter?limit=5`)).toMatchObject({ status: 204 });
    expect(await api().call('PUT', `/api/${NS}/${q}/deadletter`)).toMatchObject({ body: { count: 0 } });
  });

  it('never redelivers or dead-letters an acked job, even after its TTR', async () => {
    const q = fresh();
    const id = await api().publish(q, 'done soon', 'tries=1');
    expect((await api().consume(q, 'ttr=1')).body.job_id).toBe(id);
    expect(await api().ack(q, id)).toMatchObject({ status: 204 });
    // A blocking consume over the old TTR gets nothing.
    const { ms, value } = await timed(() => api().consume(q, 'timeout=2'));
    expect(value).toMatchObject({ status: 404, body: { msg: 'no job available' } });
    expect(ms).toBeGreaterThanOrEqual(1500);
    expect(await api().deadLetter(q)).toEqual({ size: 0, head: '' });
  });
});

describe('lmstfy: blocking and concurrent consumers', () => {
  const { api } = lmstfyInstall();

  it('gives one job to exactly one of 10 racing consumers', async () => {
    const q = fresh();
    const id = await api().publish(q, 'only one');
    const replies = await Promise.all(Array.from({ length: 10 }, () => api().consume(q, 'ttr=600')));
    expect(replies.filter((r) => r.status === 200).map((r) => r.body.job_id)).toEqual([id]);
    expect(replies.filter((r) => r.status === 404)).toHaveLength(9);
  });

  it('gives one job to exactly one of 10 waiting consumers; the others time out with 404', async () => {
    const q = fresh();
    await api().publish(q, 'makes the queue').then(() => api().consume(q)).then((r) => api().ack(q, r.body.job_id));
    const waiting = Array.from({ length: 10 }, () => timed(() => api().consume(q, 'ttr=600&timeout=3')));
    const id = await api().publish(q, 'only one');
    const replies = await Promise.all(waiting);
    const winners = replies.filter((r) => r.value.status === 200);
    expect(winners.map((r) => r.value.body.job_id)).toEqual([id]);
    expect(winners[0]!.ms).toBeLessThan(2500);
    for (const r of replies.filter((x) => x.value.status !== 200)) {
      expect(r.value).toMatchObject({ status: 404, body: { msg: 'no job available' } });
      expect(r.ms).toBeGreaterThanOrEqual(2900);
    }
  });

  it('wakes a blocking consume on a publish, on a queue that did not exist yet', async () => {
    const q = fresh();
    const waiting = timed(() => api().consume(q, 'timeout=10'));
    // The wait made the queue; publish once it is there.
    const id = await api().publish(q, 'wake up');
    const { ms, value } = await waiting;
    expect(value.body).toMatchObject({ job_id: id, data: b64('wake up') });
    expect(ms).toBeLessThan(5000);
  });

  it('serves waiters on one queue in the order they started waiting', async () => {
    const q = fresh();
    await api().publish(q, 'makes the queue').then(() => api().consume(q)).then((r) => api().ack(q, r.body.job_id));
    const order: string[] = [];
    const waiters: Array<Promise<Res>> = [];
    for (const name of ['A', 'B', 'C']) {
      waiters.push(
        api()
          .consume(q, 'timeout=10&ttr=600')
          .then((r) => {
            order.push(`${name}:${r.body?.data ? unb64(r.body.data) : r.status}`);
            return r;
          }),
      );
      // Not a timing assertion: lets this wait reach the queue process before the next one starts.
      await new Promise((r) => setTimeout(r, 300));
    }
    for (const body of ['1', '2', '3']) await api().publish(q, body);
    await Promise.all(waiters);
    expect(order.sort()).toEqual(['A:1', 'B:2', 'C:3']);
  });

  it('during a multi-queue wait, gives the first job to arrive in any listed queue; the others are not taken', async () => {
    const [q1, q2] = [fresh(), fresh()];
    const waiting = timed(() => api().consume(`${q1},${q2}`, 'timeout=10&ttr=600'));
    await new Promise((r) => setTimeout(r, 300)); // lets the wait begin; not a timing assertion
    const id2 = await api().publish(q2, 'second queue');
    const { value, ms } = await waiting;
    expect(value.body).toMatchObject({ queue: q2, job_id: id2 });
    expect(ms).toBeLessThan(5000);
    // The cancelled wait on q1 does not swallow q1's next job.
    const id1 = await api().publish(q1, 'first queue');
    await waitFor(async () => (await api().size(q1)) === 1, 5000, `${q1} to keep its job`);
    expect((await api().consume(`${q1},${q2}`)).body).toMatchObject({ queue: q1, job_id: id1, remain_tries: 0 });
  });

  it('leaves nothing leased for a waiting consumer that went away', async () => {
    const q = fresh();
    await api().publish(q, 'makes the queue').then(() => api().consume(q)).then((r) => api().ack(q, r.body.job_id));
    const gone = new AbortController();
    const aborted = api()
      .call('GET', `/api/${NS}/${q}?timeout=30&ttr=600`, { signal: gone.signal })
      .catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 300)); // lets the wait begin; not a timing assertion
    gone.abort();
    expect(await aborted).toBeInstanceOf(Error);
    const id = await api().publish(q, 'for whoever stays', 'tries=2');
    await waitFor(async () => (await api().size(q)) === 1, 5000, 'the job to be ready, not leased for the one who left');
    expect((await api().consume(q)).body).toMatchObject({ job_id: id, remain_tries: 1 });
  });
});

describe('lmstfy: a restart of the queue process', () => {
  const { t, api } = lmstfyInstall();

  it('keeps a lease across kill -9 (no redelivery before its TTR), redelivers after it; an acked job stays gone', async () => {
    const q = fresh();
    const rq = `${NS}.${q}`;
    const leased = await api().publish(q, 'leased', 'tries=2');
    const acked = await api().publish(q, 'acked', 'tries=2');
    const leasedAt = Date.now();
    expect((await api().consume(q, 'ttr=5')).body).toMatchObject({ job_id: leased, remain_tries: 1 });
    expect((await api().consume(q, 'ttr=1')).body).toMatchObject({ job_id: acked });
    expect(await api().ack(q, acked)).toMatchObject({ status: 204 });

    await t().killQueueUnderMgr(rq);
    expect(Date.now() - leasedAt).toBeLessThan(4000); // the checks below are inside the TTR
    expect(await api().consume(q)).toMatchObject({ status: 404 });
    expect((await api().peek(q, leased)).body).toMatchObject({ job_id: leased, remain_tries: 1 });
    expect(await api().peek(q, acked)).toMatchObject({ status: 404 });

    const again = await api().consume(q, 'ttr=600&timeout=10');
    const after = Date.now() - leasedAt;
    expect(again.body).toMatchObject({ job_id: leased, data: b64('leased'), remain_tries: 0 });
    expect(after).toBeGreaterThanOrEqual(4000);
    expect(after).toBeLessThanOrEqual(6000 + 500);
    expect(await api().consume(q)).toMatchObject({ status: 404 });
    expect(await api().peek(q, acked)).toMatchObject({ status: 404 });
    expect(await api().size(q)).toBe(0);
  });
});

describe('lmstfy: job attributes (Enable-Job-Version)', () => {
  const { t, api, web } = lmstfyInstall();
  /** The headers of bitleak/lmstfy's client tests. */
  const VERSIONED = { 'Enable-Job-Version': 'YES', 'Job-Attr-HELLO': 'world', 'Job-Attr-FOO': 'bar' };
  const ATTRS = { hello: 'world', foo: 'bar' };

  /** Publish with these headers; returns the job id (expects 201). */
  async function publishWith(q: string, body: string, headers: Record<string, string>, query = ''): Promise<string> {
    const r = await api().call('PUT', `/api/${NS}/${q}${query === '' ? '' : `?${query}`}`, { body, headers });
    expect(r, JSON.stringify(r.body)).toMatchObject({ status: 201, body: { msg: 'published' } });
    return r.body.job_id as string;
  }

  it('shows a versioned job\'s attributes in consume, peek and peek by id; a plain job has no attributes key', async () => {
    const q = fresh();
    const id = await publishWith(q, 'with attributes', VERSIONED, 'tries=2');
    const head = await api().peek(q);
    expect(head).toMatchObject({ status: 200, body: { job_id: id, attributes: ATTRS } });
    const r = await api().consume(q, 'ttr=600');
    expect(r.body).toMatchObject({ msg: 'new job', job_id: id, data: b64('with attributes'), remain_tries: 1 });
    expect(r.body.attributes).toEqual(ATTRS);
    expect((await api().peek(q, id)).body.attributes).toEqual(ATTRS);
    // The value's case is kept; `yes` in any case makes a versioned job.
    const lower = await publishWith(q, 'lower', { 'enable-job-version': 'yes', 'job-attr-Trace-Id': 'AbC-123', 'Job-Attr-Empty': '' });
    expect((await api().peek(q, lower)).body.attributes).toEqual({ 'trace-id': 'AbC-123', empty: '' });
    // Without Enable-Job-Version: YES, Job-Attr-* headers are not kept, and the reply is today's.
    for (const headers of [{ 'Job-Attr-HELLO': 'world' }, { 'Enable-Job-Version': 'NO', 'Job-Attr-HELLO': 'world' }]) {
      const p = fresh();
      const plain = await publishWith(p, 'plain', headers);
      expect(Object.keys((await api().peek(p, plain)).body)).not.toContain('attributes');
      const c = await api().consume(p);
      expect(c.body.job_id).toBe(plain);
      expect(Object.keys(c.body).sort()).toEqual(['data', 'elapsed_ms', 'job_id', 'msg', 'namespace', 'queue', 'remain_tries', 'ttl']);
    }
    // A versioned job with no Job-Attr-* header has none either.
    const none = await publishWith(q, 'none', { 'Enable-Job-Version': 'YES' });
    expect((await api().peek(q, none)).body).toMatchObject({ job_id: none });
    expect(Object.keys((await api().peek(q, none)).body)).not.toContain('attributes');
  });

  it('keeps UTF-8 values as sent and gives every job of a bulk publish the attributes', async () => {
    const q = fresh();
    const utf8 = 'héllo wörld ✓';
    // A header value is bytes: fetch sends each character of this text as one byte.
    const id = await publishWith(q, 'x', { 'Enable-Job-Version': 'YES', 'Job-Attr-Greeting': Buffer.from(utf8).toString('latin1') });
    expect((await api().peek(q, id)).body.attributes).toEqual({ greeting: utf8 });
    const bulk = await api().call('PUT', `/api/${NS}/${q}/bulk`, { body: '[{"a":1},{"b":2}]', headers: VERSIONED });
    expect(bulk.status).toBe(201);
    for (const jobId of bulk.body.job_ids as string[]) expect((await api().peek(q, jobId)).body.attributes).toEqual(ATTRS);
  });

  it('keeps the attributes through the dead letter, a respawn and a republish', async () => {
    const q = fresh();
    const id = await publishWith(q, 'doomed', VERSIONED, 'tries=1');
    expect((await api().consume(q, 'ttr=0')).body).toMatchObject({ job_id: id, attributes: ATTRS });
    await waitFor(async () => (await api().deadLetter(q)).size === 1, 5000, 'the dead letter');
    expect((await api().deadLetter(q)).head).toBe(id);
    expect((await api().peek(q, id)).body).toMatchObject({ job_id: id, remain_tries: 0, attributes: ATTRS });
    expect(await api().call('PUT', `/api/${NS}/${q}/deadletter`)).toMatchObject({ status: 200, body: { count: 1 } });
    expect((await api().consume(q, 'ttr=600')).body).toMatchObject({ job_id: id, data: b64('doomed'), attributes: ATTRS });
    // A plain republish keeps them; a versioned one adds its own (a name given again takes the new value).
    const r1 = await api().call('PUT', `/api/${NS}/${q}/job/${id}`, { body: 'again' });
    expect(r1.status).toBe(201);
    const second = r1.body.job_id as string;
    expect(await api().peek(q, id)).toMatchObject({ status: 404 });
    expect((await api().consume(q, 'ttr=600')).body).toMatchObject({ job_id: second, data: b64('again'), attributes: ATTRS });
    const r2 = await api().call('PUT', `/api/${NS}/${q}/job/${second}`, { body: 'third', headers: { 'Enable-Job-Version': 'YES', 'Job-Attr-Foo': 'baz', 'Job-Attr-Step': '3' } });
    expect(r2.status).toBe(201);
    expect((await api().peek(q, r2.body.job_id)).body.attributes).toEqual({ hello: 'world', foo: 'baz', step: '3' });
  });

  it('keeps the attributes across kill -9 of the queue process', async () => {
    const q = fresh();
    const ready = await publishWith(q, 'ready', VERSIONED, 'tries=2');
    const leased = await publishWith(q, 'leased', { 'Enable-Job-Version': 'YES', 'Job-Attr-Which': 'leased' });
    expect((await api().consume(q, 'ttr=1')).body.job_id).toBe(ready);
    expect((await api().consume(q, 'ttr=600')).body.job_id).toBe(leased);
    await t().killQueueUnderMgr(`${NS}.${q}`);
    expect((await api().peek(q, leased)).body.attributes).toEqual({ which: 'leased' });
    expect((await api().consume(q, 'ttr=600&timeout=10')).body).toMatchObject({ job_id: ready, attributes: ATTRS });
  });

  it('refuses too many, too long, reserved or non-UTF-8 attributes with a 400 and publishes nothing', async () => {
    const q = fresh();
    const many = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`Job-Attr-A${i}`, 'v']));
    const cases: Array<[Record<string, string>, string]> = [
      [many(33), 'too many attributes: 33 (at most 32)'],
      [{ [`Job-Attr-${'n'.repeat(65)}`]: 'v' }, 'attribute name too long: 65 bytes (at most 64)'],
      [{ 'Job-Attr-Big': 'v'.repeat(1025) }, 'attribute "big" too long: 1025 bytes (at most 1024)'],
      [{ 'Job-Attr-Big': Buffer.from('é'.repeat(513)).toString('latin1') }, 'attribute "big" too long: 1026 bytes (at most 1024)'],
      [{ 'Job-Attr-Bad': '\xff\xfe' }, 'attribute "bad" is not UTF-8 text'],
      [{ 'Job-Attr-__proto__': 'x' }, 'the attribute name "__proto__" is reserved'],
    ];
    for (const [attrs, error] of cases) {
      const headers = { 'Enable-Job-Version': 'YES', ...attrs };
      for (const route of [`/api/${NS}/${q}`, `/api/${NS}/${q}/bulk`]) {
        const r = await api().call('PUT', route, { body: '[{"a":1}]', headers });
        expect({ route, status: r.status, body: r.body }).toEqual({ route, status: 400, body: { error } });
      }
    }
    expect(await api().size(q)).toBe(0);
    // At the limits: accepted.
    const edge = { 'Enable-Job-Version': 'YES', ...many(31), [`Job-Attr-${'n'.repeat(64)}`]: 'v'.repeat(1024) };
    const id = await publishWith(q, 'edge', edge);
    expect(Object.keys((await api().peek(q, id)).body.attributes)).toHaveLength(32);
    // A republish whose attributes and the old job's come to too many: a 400, and the old job stays.
    const r = await api().call('PUT', `/api/${NS}/${q}/job/${id}`, { body: 'x', headers: { 'Enable-Job-Version': 'YES', 'Job-Attr-More': '1' } });
    expect(r).toMatchObject({ status: 400, body: { error: 'too many attributes: 33 (at most 32)' } });
    expect(await api().peek(q, id)).toMatchObject({ status: 200 });
  });

  it('keeps the attributes on the rq message, where the queue socket and the dashboard show them', async () => {
    const q = fresh();
    const rq = `${NS}.${q}`;
    const id = await publishWith(q, 'x', VERSIONED);
    const peeked = (await t().rpc(rq, 'peek', { ref: id })) as ['ok', { id: string }];
    expect(peeked).toMatchObject(['ok', { ext_id: id, attributes: ATTRS }]);
    expect(await (await web().get(`/q/${rq}/${peeked[1].id}.json`)).json()).toMatchObject({ ext_id: id, attributes: ATTRS });
    expect(await t().rpc(rq, 'publish', { attributes: { a: 1 } })).toEqual(['fail', `'attributes' must be an object of strings, got {"a":1}`, 'RQ_BAD_REQUEST']);
    expect(await t().rpc(rq, 'publish', { attributes: { '': 'x' } })).toEqual(['fail', "'attributes': an attribute name is empty", 'RQ_BAD_REQUEST']);
    const made = (await t().rpc(rq, 'publish', { attributes: { constructor: 'c' } })) as ['ok', { id: string }];
    expect(await t().rpc(rq, 'peek', { ref: made[1].id })).toMatchObject(['ok', { attributes: { constructor: 'c' } }]);
  });
});

describe('lmstfy: admin routes and tokens', () => {
  const { t, api } = lmstfyInstall({ tokens: { [NS]: [TOKEN, `default:${OTHER_TOKEN}`] }, accounts: ADMIN }, basic('admin', 'secret'));

  it('serves /version, /info and /pools', async () => {
    expect(await api().call('GET', '/version', { token: null })).toMatchObject({ status: 200, body: { version: expect.any(String) } });
    expect(await api().call('GET', '/pools', { token: null })).toMatchObject({ status: 200, body: { pools: ['default'] } });
    expect(await api().call('GET', '/info', { token: null })).toMatchObject({ status: 200, body: { pools: ['default'] } });
  });

  it('mints a ULID token per namespace that works on that namespace only, lists it and deletes it', async () => {
    const ns = 'minted';
    const r = await api().call('POST', `/token/${ns}?description=ci+worker`, { token: null });
    expect(r.status).toBe(201);
    const token = r.body.token as string;
    expect(isUlid(token)).toBe(true);
    expect(await api().call('PUT', `/api/${ns}/q`, { token, body: 'x' })).toMatchObject({ status: 201 });
    expect(await api().call('GET', `/api/${NS}/q/peek`, { token })).toMatchObject({ status: 401, body: { error: 'invalid token' } });
    expect(await api().call('GET', `/token/${ns}`, { token: null })).toMatchObject({ status: 200, body: { tokens: { [token]: 'ci worker' } } });
    expect(await api().call('DELETE', `/token/${ns}/${token}`, { token: null })).toMatchObject({ status: 204, body: null });
    expect(await api().call('GET', `/api/${ns}/q/peek`, { token })).toMatchObject({ status: 401, body: { error: 'invalid token' } });
    expect(await api().call('GET', `/token/${ns}`, { token: null })).toMatchObject({ status: 200, body: { tokens: {} } });
    expect(await api().call('DELETE', `/token/${ns}/${token}`, { token: null })).toMatchObject({ status: 204 });
    // The config's tokens are listed too (pool prefix dropped).
    expect(Object.keys((await api().call('GET', `/token/${NS}`)).body.tokens).sort()).toEqual([OTHER_TOKEN, TOKEN].sort());
  });

  it('takes description, a custom token and the pool from a form body too', async () => {
    const custom = 'custom-token-0123456789';
    const r = await api().call('POST', `/token/formns`, {
      token: null,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ description: 'from a form', token: custom, pool: 'default' }).toString(),
    });
    expect(r).toMatchObject({ status: 201, body: { token: custom } });
    expect(await api().call('GET', `/api/formns/q/peek`, { token: custom })).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await api().call('POST', `/token/other2?description=d&token=default:${custom}`)).toMatchObject({ status: 201, body: { token: custom } });
  });

  it('refuses bad token requests with lmstfy\'s admin texts, in order', async () => {
    const cases: Array<[string, string]> = [
      ['/token/ns', 'invalid description'],
      ['/token/ns?description=', 'invalid description'],
      ['/token/ns?description=d&token=short', 'the user token was too short'],
      [`/token/${'n'.repeat(256)}?description=d&token=short`, 'the user token was too short'],
      [`/token/${'n'.repeat(256)}?description=d`, 'the namespace name was too long'],
      ['/token/bad.ns?description=d', 'namespace name contains forbidden characters'],
      ['/token/ns?description=d&pool=nope', 'the pool was not exists'],
      ['/token/ns?description=d&token=nope:aaaaaaaaaaaaaaaaaaaaaaaaa', 'the pool was not exists'],
      [`/token/${NS}?description=d&token=${TOKEN}`, 'the token has already existed'],
    ];
    for (const [p, error] of cases) {
      const r = await api().call('POST', p, { token: null });
      expect({ p: p.slice(0, 40), status: r.status, body: r.body }).toEqual({ p: p.slice(0, 40), status: 400, body: { error } });
    }
    const custom = 'dup-token-0123456789abc';
    expect(await api().call('POST', `/token/dup?description=d&token=${custom}`)).toMatchObject({ status: 201 });
    expect(await api().call('POST', `/token/dup?description=d&token=${custom}`)).toMatchObject({ status: 400, body: { error: 'the token has already existed' } });
    expect(await api().call('GET', `/token/bad.ns`)).toMatchObject({ status: 400, body: { error: 'namespace name contains forbidden characters' } });
  });

  it('keeps minted tokens and deletions across a restart, in config/lmstfy_tokens.json', async () => {
    const minted = (await api().call('POST', `/token/keep?description=kept`)).body.token as string;
    expect(await api().call('DELETE', `/token/${NS}/${OTHER_TOKEN}`)).toMatchObject({ status: 204 });
    const file = path.join(t().root, 'config/lmstfy_tokens.json');
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ tokens: { keep: { [minted]: 'kept' } }, revoked: { [NS]: [OTHER_TOKEN] } });

    expect((await t().bin('rq-mgr', ['stop'])).code).toBe(0);
    const again = new Lmstfy((await startProtocols(t(), { lmstfy: { tokens: { [NS]: [TOKEN, OTHER_TOKEN] }, accounts: ADMIN } })).base('lmstfy'), basic('admin', 'secret'));
    expect(await again.call('GET', `/api/keep/q/peek`, { token: minted })).toMatchObject({ status: 404, body: { error: 'job not found' } });
    expect(await again.call('GET', `/api/${NS}/q/peek`, { token: OTHER_TOKEN })).toMatchObject({ status: 401, body: { error: 'invalid token' } });
    expect(await again.call('GET', `/api/${NS}/q/peek`, { token: TOKEN })).toMatchObject({ status: 404 });
    // Minting a deleted config token brings it back.
    expect(await again.call('POST', `/token/${NS}?description=back&token=${OTHER_TOKEN}`)).toMatchObject({ status: 201, body: { token: OTHER_TOKEN } });
    expect(await again.call('GET', `/api/${NS}/q/peek`, { token: OTHER_TOKEN })).toMatchObject({ status: 404, body: { error: 'job not found' } });
  });
});

describe('lmstfy: auth off, admin accounts', () => {
  const { api } = lmstfyInstall({ auth: false, accounts: ADMIN });

  it('skips the token check with auth false, but still checks names and the pool', async () => {
    const q = fresh();
    const r = await api().call('PUT', `/api/anyns/${q}`, { token: null, body: 'open' });
    expect(r.status).toBe(201);
    expect(await api().call('GET', `/api/anyns/${q}`, { token: 'whatever' })).toMatchObject({ status: 200, body: { job_id: r.body.job_id } });
    expect(await api().call('GET', `/api/anyns/${q}`, { token: 'nope:x' })).toMatchObject({ status: 404, body: { error: 'pool not found' } });
    expect(await api().call('GET', `/api/any.ns/${q}/peek`, { token: null })).toMatchObject({ status: 400 });
  });

  it('asks for HTTP Basic auth on the token routes when accounts are set', async () => {
    const no = await api().call('POST', '/token/ns?description=d', { token: null });
    expect(no.status).toBe(401);
    expect(no.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect(await api().call('GET', '/token/ns', { token: null, headers: basic('admin', 'wrong') })).toMatchObject({ status: 401 });
    expect(await api().call('POST', '/token/ns?description=d', { token: null, headers: basic('admin', 'secret') })).toMatchObject({ status: 201 });
    expect(await api().call('GET', '/token/ns', { token: null, headers: basic('admin', 'secret') })).toMatchObject({ status: 200 });
    expect(await api().call('GET', '/version', { token: null })).toMatchObject({ status: 200 });
  });
});

describe('lmstfy: the config section', () => {
  const refused = (raw: Record<string, unknown>): string => {
    try {
      parseLmstfySection({ port: 1, ...raw });
    } catch (e) {
      expect(e).toBeInstanceOf(RqError);
      expect((e as RqError).code).toBe('RQ_CONFIG');
      return (e as Error).message;
    }
    throw new Error('accepted');
  };

  it('names the bad key', () => {
    expect(refused({ auth: 'no' })).toMatch(/"protocols\.lmstfy\.auth" must be true or false/);
    expect(refused({ tokens: ['a'] })).toMatch(/"protocols\.lmstfy\.tokens" must be an object/);
    expect(refused({ tokens: { 'bad.ns': ['a'] } })).toMatch(/"protocols\.lmstfy\.tokens" must be keyed by namespaces/);
    expect(refused({ tokens: { ns: 'a' } })).toMatch(/"protocols\.lmstfy\.tokens\.ns" must be an array/);
    expect(refused({ tokens: { ns: [''] } })).toMatch(/"protocols\.lmstfy\.tokens\.ns" must be an array of non-empty tokens/);
    expect(refused({ tokens: { ns: ['other:x'] } })).toMatch(/in the pool "default"/);
    expect(refused({ accounts: { a: 1 } })).toMatch(/"protocols\.lmstfy\.accounts"/);
    expect(refused({ tokenz: {} })).toMatch(/"protocols\.lmstfy\.tokenz"/);
    expect(parseLmstfySection({ port: 1, addr: 'x', tokens: { ns: ['a', 'default:b'] } })).toMatchObject({ auth: true, preset: new Map([['ns', new Set(['a', 'b'])]]) });
  });
});
