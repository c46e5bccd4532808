/**
 * The Cloudq front door (docs/doors/cloudq.md) over real HTTP, against a real rq-mgr, its web
 * process and the queue processes behind it. Each describe shares one install (rq-mgr
 * started once with its `protocols.cloudq` section); each test uses queues of its own.
 *
 * Where a test must know a GET is already waiting before it acts (waitMs), it gives the
 * request a moment to arrive: what it then checks holds however long that moment was
 * (a job published after it can only reach a GET that was waiting for it).
 */
import fs from 'node:fs';
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { parseCloudqConfig } from '../../src/protocols/cloudq.js';
import { waitFor, type TestRoot } from '../helpers/install.js';
import { sharedProtocols } from '../helpers/protocols.js';
import { rawRequest } from '../helpers/web.js';

const MiB = 1024 * 1024;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

interface Cloudq {
  t: () => TestRoot;
  port: () => number;
  /** A request to the front door; `body` is sent as it is. */
  call(method: string, path: string, body?: string | Buffer, headers?: Record<string, string>): Promise<Answer>;
  /** POST a JSON body; returns the answer and the id from X-Cloudq-Id. */
  publish(queue: string, body: unknown): Promise<Answer & { id: string }>;
  /** GET /:queue, the job (or the whole reply when it has none). */
  reserve(queue: string, init?: { signal?: AbortSignal }): Promise<Answer>;
}

/** One install for the calling describe, serving Cloudq with `section` (besides port). */
function sharedCloudq(section: Record<string, unknown> = {}, headers: Record<string, string> = {}): Cloudq {
  const doors = sharedProtocols({ cloudq: section });
  const port = (): number => doors.port('cloudq');
  // node:http rather than fetch: fetch would resolve `..` and `%2e%2e` segments before sending.
  const call = (method: string, path: string, body?: string | Buffer, extra: Record<string, string> = {}, init: { signal?: AbortSignal } = {}): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: port(), method, path, headers: { ...headers, ...extra }, ...init }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> = {};
          try {
            json = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // not JSON: the test looks at `text`
          }
          const h = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
          resolve({ status: res.statusCode!, headers: h, text, json });
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  return {
    t: doors.t,
    port,
    call: (method, path, body, extra) => call(method, path, body, extra),
    async publish(queue, body) {
      const a = await call('POST', `/${queue}`, JSON.stringify(body), { 'content-type': 'application/json' });
      expect(a.json, a.text).toEqual({ status: 'success' });
      return { ...a, id: a.headers.get('x-cloudq-id')! };
    },
    reserve: (queue, init = {}) => call('GET', `/${queue}`, undefined, {}, init),
  };
}

let serial = 0;
/** A queue name no other test uses. */
const fresh = (tag: string): string => `${tag}-${++serial}`;

const job = (a: Answer): Record<string, unknown> => a.json['job'] as Record<string, unknown>;

/** The queue's pull counters, through its socket. */
async function pullStats(t: TestRoot, queue: string): Promise<{ ready: number; delayed: number; leased: number; dead: number }> {
  const r = (await t.rpc(queue, 'pull_stats', {})) as [string, { ready: number; delayed: number; leased: number; dead: number }];
  expect(r[0]).toBe('ok');
  return r[1];
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('routes, validation and the job life cycle', () => {
  const c = sharedCloudq();

  it('answers GET / with a JSON greeting', async () => {
    const a = await c.call('GET', '/');
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(a.json).toEqual({ status: 'success', message: 'cloudq' });
  });

  it('answers 404 not found for any other method or path', async () => {
    for (const [method, path] of [
      ['GET', '/q/someid'],
      ['POST', '/q/someid'],
      ['PUT', '/q/someid'],
      ['DELETE', '/q'],
      ['PATCH', '/q'],
      ['POST', '/'],
      ['DELETE', '/'],
      ['GET', '/a/b/c'],
      ['DELETE', '/a/b/c'],
    ] as const) {
      const a = await c.call(method, path);
      expect([method, path, a.status, a.json]).toEqual([method, path, 404, { status: 'error', message: 'not found' }]);
      expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8');
    }
  });

  it('refuses a queue name outside [A-Za-z0-9_.-]{1,255} with 400 invalid queue name, on every route', async () => {
    const bad = ['bad$name', 'a%20b', 'a%2Fb', '%2e%2e', '..', '.', '.hidden', 'a(b)', 'a+b', 'x.deleted.3', '%C3%BC', 'a'.repeat(256), '%zz'];
    for (const name of bad) {
      for (const [method, path] of [
        ['GET', `/${name}`],
        ['POST', `/${name}`],
        ['PUT', `/${name}`],
        ['DELETE', `/${name}/20240101.1200.00.123.4567`],
      ] as const) {
        const a = await c.call(method, path, method === 'POST' || method === 'PUT' ? 'not even json' : undefined);
        expect([method, path, a.status, a.json]).toEqual([method, path, 400, { status: 'error', message: 'invalid queue name' }]);
      }
    }
    // The longest name and the whole charset are fine (an empty queue).
    for (const name of ['a'.repeat(255), 'Az09_.-x']) expect((await c.reserve(name)).json).toEqual({ status: 'empty' });
  });

  it('checks a published job in node-cloudq\'s order, the first failure a 400 with its message, and stores nothing', async () => {
    const q = fresh('checks');
    const cases: Array<[string, string]> = [
      ['', 'job object required'],
      ['not json', 'job object required'],
      ['[1,2]', 'job object required'],
      ['null', 'job object required'],
      ['"job"', 'job object required'],
      ['{}', 'job object required'],
      ['{"args":[]}', 'job object required'],
      ['{"job":5}', 'job object required'],
      ['{"job":null,"klass":"K","args":[]}', 'job object required'],
      ['{"job":["klass"]}', 'job object required'],
      ['{"job":{}}', 'klass key required'],
      ['{"job":{"args":5}}', 'klass key required'],
      ['{"job":{"klass":"","args":5}}', 'klass must be a string'],
      ['{"job":{"klass":5}}', 'klass must be a string'],
      ['{"job":{"klass":null,"args":[]}}', 'klass must be a string'],
      ['{"job":{"klass":"K"}}', 'args key required'],
      ['{"job":{"klass":"K","args":{}}}', 'args must be an array'],
      ['{"job":{"klass":"K","args":"a"}}', 'args must be an array'],
      ['{"klass":"K"}', 'args key required'],
      ['{"klass":"K","args":null}', 'args must be an array'],
      ['{"klass":7,"args":[]}', 'klass must be a string'],
    ];
    for (const [body, message] of cases) {
      const a = await c.call('POST', `/${q}`, body, { 'content-type': 'application/json' });
      expect([body, a.status, a.json]).toEqual([body, 400, { status: 'error', message }]);
    }
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
  });

  it('publishes the wrapped form: exactly {"status":"success"}, the id in Location and X-Cloudq-Id, and reserves it as {"job":{...,"id"}}', async () => {
    const q = fresh('wrapped');
    const a = await c.call('POST', `/${q}`, '{"job":{"klass":"Archive","args":[{"data":"foobar"}]}}', { 'content-type': 'application/json' });
    expect(a.status).toBe(200);
    expect(a.text).toBe('{"status":"success"}');
    expect(a.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const id = a.headers.get('x-cloudq-id')!;
    expect(id).toMatch(/^\d{8}\.\d{4}\.\d{2}\.\d{3}\.\d+$/);
    expect(a.headers.get('location')).toBe(`/${q}/${id}`);
    const r = await c.reserve(q);
    expect(r.status).toBe(200);
    expect(r.text).toBe(`{"job":{"klass":"Archive","args":[{"data":"foobar"}],"id":"${id}"}}`);
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
  });

  it('stores the job as an rq message: src cloudq, param1 the klass, param2 the compact args, the payload for GET', async () => {
    const q = fresh('stored');
    const { id } = await c.publish(q, { job: { klass: 'Mailer', args: [1, { to: 'a@b' }, [null]] } });
    const msg = await c.t().message(q, id);
    expect(msg['src']).toBe('cloudq');
    expect(msg['param1']).toBe('Mailer');
    expect(msg['param2']).toBe('[1,{"to":"a@b"},[null]]');
    expect(msg['max_count']).toBe(15);
    expect(await c.t().state(q, id)).toBe('que');
    expect(fs.readFileSync(`${c.t().queueDir(q)}/que/${id}/attach/payload`, 'utf8')).toBe('{"klass":"Mailer","args":[1,{"to":"a@b"},[null]]}');
  });

  it('publishes the unwrapped form and the PUT alias; keeps other members, overwrites a client id', async () => {
    const q = fresh('unwrapped');
    const a = await c.publish(q, { klass: 'Plain', args: ['x'], id: 'mine', extra: { keep: true } });
    const b = await c.call('PUT', `/${q}`, JSON.stringify({ job: { id: 'also-mine', klass: 'Put', args: [], note: 'n' } }));
    expect(b.json).toEqual({ status: 'success' });
    expect(job(await c.reserve(q))).toEqual({ klass: 'Plain', args: ['x'], extra: { keep: true }, id: a.id });
    expect(job(await c.reserve(q))).toEqual({ klass: 'Put', args: [], note: 'n', id: b.headers.get('x-cloudq-id') });
  });

  it('parses JSON whatever the content type says, and Rack-style nested form keys', async () => {
    const q = fresh('types');
    const bodies: Array<[string, string | undefined]> = [
      ['{"job":{"klass":"NoType","args":[1]}}', undefined],
      ['{"job":{"klass":"Text","args":[2]}}', 'text/plain'],
      // curl -d sends this type with a JSON body
      ['{"job":{"klass":"CurlD","args":[3]}}', 'application/x-www-form-urlencoded'],
      ['job[klass]=Form&job[args][]=a&job[args][]=b', 'application/x-www-form-urlencoded'],
      ['job%5Bklass%5D=Nested&job%5Bargs%5D%5B0%5D%5Bdata%5D=x&job%5Bargs%5D%5B1%5D=y', 'application/x-www-form-urlencoded; charset=utf-8'],
      ['klass=FlatForm&args[]=z', 'application/x-www-form-urlencoded'],
    ];
    for (const [body, type] of bodies) {
      const a = await c.call('POST', `/${q}`, body, type ? { 'content-type': type } : {});
      expect([body, a.json]).toEqual([body, { status: 'success' }]);
    }
    const got = [];
    for (let i = 0; i < bodies.length; i++) {
      const { id: _, ...rest } = job(await c.reserve(q));
      got.push(rest);
    }
    expect(got).toEqual([
      { klass: 'NoType', args: [1] },
      { klass: 'Text', args: [2] },
      { klass: 'CurlD', args: [3] },
      { klass: 'Form', args: ['a', 'b'] },
      { klass: 'Nested', args: [{ data: 'x' }, 'y'] },
      { klass: 'FlatForm', args: ['z'] },
    ]);
    // A form body whose args are not an array, and a form type body that is neither.
    expect((await c.call('POST', `/${q}`, 'job[klass]=F&job[args]=a', { 'content-type': 'application/x-www-form-urlencoded' })).json).toEqual({
      status: 'error',
      message: 'args must be an array',
    });
    expect((await c.call('POST', `/${q}`, 'job[klass]=F', { 'content-type': 'application/x-www-form-urlencoded' })).json).toEqual({
      status: 'error',
      message: 'args key required',
    });
    expect((await c.call('POST', `/${q}`, 'job[klass]=F&job[args][]=a', { 'content-type': 'text/plain' })).json).toEqual({
      status: 'error',
      message: 'job object required',
    });
  });

  it('answers {"status":"empty"} for a queue that never existed, and does not make it', async () => {
    const q = fresh('never');
    const a = await c.reserve(q);
    expect(a.status).toBe(200);
    expect(a.text).toBe('{"status":"empty"}');
    expect(fs.existsSync(c.t().queueDir(q))).toBe(false);
  });

  it('reserves in publish order, whatever a priority member says, each job once', async () => {
    const q = fresh('fifo');
    const ids = [];
    for (let i = 0; i < 6; i++) ids.push((await c.publish(q, { job: { klass: 'K', args: [i], priority: i } })).id);
    const got = [];
    for (let i = 0; i < 6; i++) got.push(job(await c.reserve(q)));
    expect(got.map((j) => j['id'])).toEqual(ids);
    expect(got.map((j) => (j['args'] as number[])[0])).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
  });

  it('deletes a new job and a reserved job (to done, "deleted via cloudq"); a second delete is 404', async () => {
    const q = fresh('delete');
    const fresh1 = (await c.publish(q, { job: { klass: 'New', args: [] } })).id;
    const reserved = (await c.publish(q, { job: { klass: 'Reserved', args: [] } })).id;
    // The first is deleted before anyone reserves it, so the GET takes the second.
    expect(await c.call('DELETE', `/${q}/${fresh1}`)).toMatchObject({ status: 200, json: { status: 'success' } });
    expect(job(await c.reserve(q))['id']).toBe(reserved);
    expect(await c.call('DELETE', `/${q}/${reserved}`)).toMatchObject({ status: 200, json: { status: 'success' } });
    for (const id of [fresh1, reserved]) {
      expect(await c.t().state(q, id)).toBe('done');
      expect(await c.t().statusOf(q, id)).toBe('done - deleted via cloudq');
      const again = await c.call('DELETE', `/${q}/${id}`);
      expect([again.status, again.json]).toEqual([404, { status: 'error', message: 'job not found' }]);
    }
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
  });

  it('answers 404 job not found for an unknown id, a job of another queue, and a queue that never existed', async () => {
    const q = fresh('del404');
    const other = fresh('del404');
    const { id } = await c.publish(q, { job: { klass: 'K', args: [] } });
    await c.publish(other, { job: { klass: 'K', args: [] } });
    for (const path of [`/${q}/20200101.0000.00.000.1`, `/${q}/nonsense`, `/${q}/%zz`, `/${q}/..`, `/${q}/%2e%2e`, `/${other}/${id}`, `/${fresh('nothere')}/${id}`]) {
      const a = await c.call('DELETE', path);
      expect([path, a.status, a.json]).toEqual([path, 404, { status: 'error', message: 'job not found' }]);
    }
    expect(await c.t().state(q, id)).toBe('que');
  });

  it('DELETE racing DELETE on one id: one success, one 404', async () => {
    const q = fresh('delrace');
    for (let i = 0; i < 5; i++) {
      const { id } = await c.publish(q, { job: { klass: 'K', args: [i] } });
      if (i % 2 === 1) expect(job(await c.reserve(q))['id']).toBe(id);
      const answers = await Promise.all([c.call('DELETE', `/${q}/${id}`), c.call('DELETE', `/${q}/${id}`)]);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 404]);
    }
  });

  it('many GETs racing for one job: exactly one gets it, the others empty', async () => {
    const q = fresh('getrace');
    for (let round = 0; round < 3; round++) {
      const { id } = await c.publish(q, { job: { klass: 'K', args: [round] } });
      const answers = await Promise.all(Array.from({ length: 16 }, () => c.reserve(q)));
      const winners = answers.filter((a) => a.json['job'] !== undefined);
      expect(winners.map((a) => job(a)['id'])).toEqual([id]);
      expect(answers.filter((a) => a.json['status'] === 'empty')).toHaveLength(15);
    }
  });

  it('reads an RQ-native message: klass = param1 (the queue name when empty), args = the non-null params', async () => {
    const q = fresh('native');
    await c.publish(q, { job: { klass: 'First', args: [] } }); // makes the pull queue
    expect(job(await c.reserve(q))['klass']).toBe('First');
    const a = await c.t().send(q, { param1: 'Mailer', param2: 'to@x', param4: 'p4' });
    const b = await c.t().send(q, {});
    expect(job(await c.reserve(q))).toEqual({ klass: 'Mailer', args: ['Mailer', 'to@x', 'p4'], id: a });
    expect(job(await c.reserve(q))).toEqual({ klass: q, args: [], id: b });
  });

  it('reads a message of another front door whose payload is not a Cloudq job: the params, and the payload beside them', async () => {
    const q = fresh('foreign');
    await c.publish(q, { job: { klass: 'First', args: [] } });
    await c.reserve(q);
    const published = async (payload: string, params: Record<string, unknown>): Promise<string> => {
      const r = (await c.t().rpc(q, 'publish', { src: 'lmstfy', payload: Buffer.from(payload).toString('base64'), params })) as [string, { id: string }];
      expect(r[0]).toBe('ok');
      return r[1].id;
    };
    const text = await published('hello', { param1: 'Raw' });
    const json = await published('{"n":1}', {});
    expect(job(await c.reserve(q))).toEqual({ klass: 'Raw', args: ['Raw'], payload: 'hello', id: text });
    expect(job(await c.reserve(q))).toEqual({ klass: q, args: [], payload: { n: 1 }, id: json });
  });

  it('takes a body of 10 MiB and refuses a larger one with 413 job too large (announced, chunked, or far too large)', async () => {
    const q = fresh('limit');
    const sized = (n: number): string => {
      const head = '{"job":{"klass":"Big","args":["';
      const tail = '"]}}';
      return head + 'x'.repeat(n - head.length - tail.length) + tail;
    };
    const over = await c.call('POST', `/${q}`, sized(10 * MiB + 1), { 'content-type': 'application/json' });
    expect([over.status, over.json]).toEqual([413, { status: 'error', message: 'job too large' }]);
    // Sent in chunks with no length announced.
    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ port: c.port(), host: '127.0.0.1', method: 'POST', path: `/${q}`, headers: { 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      const big = sized(11 * MiB);
      for (let i = 0; i < big.length; i += MiB) req.write(big.slice(i, i + MiB));
      req.end();
    });
    expect(chunked).toEqual({ status: 413, body: '{"status":"error","message":"job too large"}' });
    // Announced far beyond any drain: answered at once, the connection closed.
    const far = await rawRequest(c.port(), `POST /${q} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 900000000\r\n\r\n{"job"`);
    expect(far).toMatch(/^HTTP\/1\.1 413 /);
    expect(far).toContain('{"status":"error","message":"job too large"}');
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
    const exact = await c.call('POST', `/${q}`, sized(10 * MiB), { 'content-type': 'application/json' });
    expect(exact.json).toEqual({ status: 'success' });
    const got = job(await c.reserve(q));
    expect((got['args'] as string[])[0]).toHaveLength(10 * MiB - '{"job":{"klass":"Big","args":[""]}}'.length);
  });
});

describe('flatReserve', () => {
  const c = sharedCloudq({ flatReserve: true });

  it('answers a reserve with the job members at the top level', async () => {
    const q = fresh('flat');
    const { id } = await c.publish(q, { job: { klass: 'Archive', args: [{ data: 'foobar' }] } });
    const a = await c.reserve(q);
    expect(a.text).toBe(`{"klass":"Archive","args":[{"data":"foobar"}],"id":"${id}"}`);
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
  });
});

describe('waitMs', () => {
  const WAIT = 2_000;
  const c = sharedCloudq({ waitMs: WAIT });

  it('an empty GET waits waitMs, then answers empty', async () => {
    const q = fresh('waitempty');
    await c.publish(q, { job: { klass: 'K', args: [] } });
    await c.reserve(q);
    const started = Date.now();
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(WAIT - 50);
  });

  it('a waiting GET receives a job published meanwhile, on a queue made before or by that publish', async () => {
    const existing = fresh('waitjob');
    await c.publish(existing, { job: { klass: 'K', args: [] } });
    await c.reserve(existing);
    for (const q of [existing, fresh('waitnew')]) {
      const waiting = c.reserve(q);
      await pause(300);
      const { id } = await c.publish(q, { job: { klass: 'Late', args: [q] } });
      const a = await waiting;
      expect(job(a)).toEqual({ klass: 'Late', args: [q], id });
      expect(await c.t().state(q, id)).toBe('run');
    }
  });

  it('a client that disconnects mid-wait gets no job reserved for it: the next GET takes the job', async () => {
    const q = fresh('waitgone');
    await c.publish(q, { job: { klass: 'K', args: [] } });
    await c.reserve(q);
    for (let round = 0; round < 3; round++) {
      const gone = new AbortController();
      const waiting = c.reserve(q, { signal: gone.signal }).catch((e: unknown) => e);
      await pause(300);
      gone.abort();
      expect(await waiting).toBeInstanceOf(Error);
      const { id } = await c.publish(q, { job: { klass: 'Orphan', args: [round] } });
      const a = await c.reserve(q);
      expect(job(a)['id']).toBe(id);
      expect((await c.t().message(q, id))['count']).toBe(1);
    }
  });
});

describe('reserveTimeoutMs', () => {
  const c = sharedCloudq({ reserveTimeoutMs: 400 });

  it('a reservation not deleted in time comes back at the head of the queue, its count raised', async () => {
    const q = fresh('ttr');
    const a = await c.publish(q, { job: { klass: 'A', args: [] } });
    expect(job(await c.reserve(q))['id']).toBe(a.id);
    expect((await c.t().message(q, a.id))['count']).toBe(1);
    const b = await c.publish(q, { job: { klass: 'B', args: [] } });
    await waitFor(async () => (await pullStats(c.t(), q)).leased === 0, 10_000, 'the reservation to run out');
    expect(job(await c.reserve(q))['id']).toBe(a.id);
    expect((await c.t().message(q, a.id))['count']).toBe(2);
    expect(job(await c.reserve(q))['id']).toBe(b.id);
    // Deleted in time, it stays deleted.
    expect((await c.call('DELETE', `/${q}/${b.id}`)).json).toEqual({ status: 'success' });
  });

  it('a job reserved max_count times without a delete goes to err', async () => {
    const q = fresh('ttrmax');
    const first = await c.publish(q, { job: { klass: 'First', args: [] } }); // makes the pull queue
    expect((await c.call('DELETE', `/${q}/${first.id}`)).json).toEqual({ status: 'success' });
    const payload = Buffer.from('{"klass":"Flaky","args":[]}').toString('base64');
    const r = (await c.t().rpc(q, 'publish', { src: 'cloudq', payload, params: { param1: 'Flaky', param2: '[]' }, max_count: 3 })) as [string, { id: string }];
    expect(r[0]).toBe('ok');
    const id = r[1].id;
    let reservations = 0;
    await waitFor(
      async () => {
        const a = await c.reserve(q);
        if (a.json['job'] !== undefined) {
          expect(job(a)).toEqual({ klass: 'Flaky', args: [], id });
          reservations++;
        }
        return (await c.t().state(q, id)) === 'err';
      },
      15_000,
      'the job to reach err',
    );
    expect(reservations).toBe(3);
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
    expect((await c.call('DELETE', `/${q}/${id}`)).status).toBe(404);
  });
});

describe('basicAuth', () => {
  const auth = (user: string, pass: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` });
  const c = sharedCloudq({ basicAuth: { user: 'worker', passwords: ['secret', 'secret2'] } });

  it('answers 401 with WWW-Authenticate: Basic before anything else when the credential is missing or wrong', async () => {
    const q = fresh('auth');
    const wrong = [{}, auth('worker', 'nope'), auth('other', 'secret'), auth('worker', ''), { authorization: 'Bearer secret' }, { authorization: 'Basic !!!' }];
    for (const headers of wrong) {
      for (const [method, path, body] of [
        ['GET', `/${q}`],
        ['POST', `/${q}`, '{"job":{"klass":"K","args":[]}}'],
        ['DELETE', `/${q}/20200101.0000.00.000.1`],
        ['GET', '/'],
        ['GET', '/a/b/c'],
        ['GET', '/bad$name'],
        ['POST', `/${q}`, 'x'.repeat(11 * MiB)],
      ] as Array<[string, string, string?]>) {
        const a = await c.call(method, path, body, headers);
        expect([method, path, a.status, a.json]).toEqual([method, path, 401, { status: 'error', message: 'unauthorized' }]);
        expect(a.headers.get('www-authenticate')).toMatch(/^Basic\b/);
      }
    }
    expect(fs.existsSync(c.t().queueDir(q))).toBe(false);
  });

  it('accepts either configured password', async () => {
    const q = fresh('auth');
    const a = await c.call('POST', `/${q}`, '{"job":{"klass":"K","args":[]}}', auth('worker', 'secret'));
    expect(a.json).toEqual({ status: 'success' });
    const r = await c.call('GET', `/${q}`, undefined, auth('worker', 'secret2'));
    expect(job(r)['id']).toBe(a.headers.get('x-cloudq-id'));
    expect((await c.call('DELETE', `/${q}/${job(r)['id'] as string}`, undefined, auth('worker', 'secret2'))).json).toEqual({ status: 'success' });
  });
});

describe('a restart of the queue process', () => {
  const c = sharedCloudq();

  it('keeps a reserved job reserved across kill -9 and rq-mgr restarting it, and DELETE still works', async () => {
    const q = fresh('restart');
    const { id } = await c.publish(q, { job: { klass: 'Survivor', args: [] } });
    const other = await c.publish(q, { job: { klass: 'Waiting', args: [] } });
    expect(job(await c.reserve(q))['id']).toBe(id);
    await c.t().killQueueUnderMgr(q, 15_000);
    expect(await c.t().state(q, id)).toBe('run');
    expect(job(await c.reserve(q))['id']).toBe(other.id);
    expect((await c.reserve(q)).json).toEqual({ status: 'empty' });
    expect((await c.call('DELETE', `/${q}/${id}`)).json).toEqual({ status: 'success' });
    expect(await c.t().state(q, id)).toBe('done');
    expect((await c.call('DELETE', `/${q}/${id}`)).status).toBe(404);
  });
});

describe('the protocols.cloudq section', () => {
  it('takes the documented keys with their defaults', () => {
    expect(parseCloudqConfig({ port: 1 })).toEqual({ flatReserve: false, reserveTimeoutMs: 0, waitMs: 0, basicAuth: undefined, queues: [] });
    expect(parseCloudqConfig({ port: 1, addr: '0.0.0.0', flatReserve: true, reserveTimeoutMs: 5000, waitMs: 500, basicAuth: { user: 'u', passwords: ['a', 'b'] } })).toEqual({
      flatReserve: true,
      reserveTimeoutMs: 5000,
      waitMs: 500,
      basicAuth: { user: 'u', passwords: ['a', 'b'] },
      queues: [],
    });
    expect(parseCloudqConfig({ port: 1, queues: ['nsB.*', 'jobs'] }).queues.map(String)).toEqual(['/^nsB\\..*$/', '/^jobs$/']);
  });

  it('refuses a bad key with RQ_CONFIG naming it', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ flatReserve: 'yes' }, '"protocols.cloudq.flatReserve" must be true or false, got "yes"'],
      [{ reserveTimeoutMs: -1 }, '"protocols.cloudq.reserveTimeoutMs" must be an integer number of milliseconds'],
      [{ reserveTimeoutMs: 1.5 }, '"protocols.cloudq.reserveTimeoutMs"'],
      [{ waitMs: '100' }, '"protocols.cloudq.waitMs" must be an integer number of milliseconds 0..3600000, got "100"'],
      [{ waitMs: 3_600_001 }, '"protocols.cloudq.waitMs"'],
      [{ basicAuth: 'u:p' }, '"protocols.cloudq.basicAuth" must be an object'],
      [{ basicAuth: { user: '', passwords: ['p'] } }, '"protocols.cloudq.basicAuth.user" must be a non-empty string without ":"'],
      [{ basicAuth: { user: 'a:b', passwords: ['p'] } }, '"protocols.cloudq.basicAuth.user"'],
      [{ basicAuth: { user: 'u', passwords: [] } }, '"protocols.cloudq.basicAuth.passwords" must be an array of one or two non-empty strings, got []'],
      [{ basicAuth: { user: 'u', passwords: ['a', 'b', 'c'] } }, '"protocols.cloudq.basicAuth.passwords"'],
      [{ basicAuth: { user: 'u', passwords: ['a', 7] } }, '"protocols.cloudq.basicAuth.passwords"'],
      [{ basicAuth: { user: 'u', password: 'a' } }, '"protocols.cloudq.basicAuth.passwords"'],
      [{ waitms: 100 }, '"protocols.cloudq.waitms" is not a Cloudq key'],
      [{ queues: 'nsB.*' }, '"protocols.cloudq.queues" must be an array of queue name patterns'],
      [{ queues: ['nsB/*'] }, '"protocols.cloudq.queues"'],
      [{ queues: [''] }, '"protocols.cloudq.queues"'],
    ];
    for (const [section, text] of cases) {
      let thrown: unknown;
      try {
        parseCloudqConfig({ port: 1, ...section });
      } catch (e) {
        thrown = e;
      }
      expect(thrown, JSON.stringify(section)).toBeInstanceOf(RqError);
      expect((thrown as RqError).code).toBe('RQ_CONFIG');
      expect((thrown as RqError).message).toContain(text);
    }
  });
});
