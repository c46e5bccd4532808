/**
 * The lmstfy door's rate limits, `/metrics` and access log, over real HTTP against a
 * running rq (rq-mgr, the web process that serves the door, the queue processes): the
 * limiter routes and their 429s, the limiters kept across a restart of the web process,
 * the Prometheus text, and the access log's lines and switch.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { parseLmstfySection } from '../../src/protocols/lmstfy-config.js';
import { LimitTable } from '../../src/protocols/lmstfy-limits.js';
import { waitFor, type TestRoot } from '../helpers/install.js';
import { sharedProtocols } from '../helpers/protocols.js';
import { webPid } from '../helpers/web-process.js';

const NS = 'lim';
const TOKEN = 'tok-lim-0123456789abcdef';
const OTHER_TOKEN = 'tok-lim-other-0123456789';
const ADMIN = { admin: 'secret' };
const AUTH = { authorization: `Basic ${Buffer.from('admin:secret').toString('base64')}` };

interface Res {
  status: number;
  /** The body: JSON parsed, else its text (null when empty). */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers;
}

/** One request to the door at `base`; `token` goes in X-Token, `auth` adds the admin's Basic credentials. */
async function request(base: string, method: string, pathname: string, o: { token?: string; auth?: boolean; body?: string } = {}): Promise<Res> {
  const headers: Record<string, string> = { ...(o.auth ? AUTH : {}), ...(o.token !== undefined ? { 'X-Token': o.token } : {}) };
  const res = await fetch(base + pathname, { method, headers, ...(o.body !== undefined ? { body: o.body } : {}) });
  const text = await res.text();
  let body: unknown = text === '' ? null : text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the text itself
  }
  return { status: res.status, body, headers: res.headers };
}

let serial = 0;
const fresh = (stem = 'q'): string => `${stem}${++serial}`;

/** One install for the calling describe: the lmstfy door with two tokens of NS, and an admin account. */
function doorInstall(): { t: () => TestRoot; base: () => string } {
  const doors = sharedProtocols({ lmstfy: { tokens: { [NS]: [TOKEN, OTHER_TOKEN] }, accounts: ADMIN } });
  return { t: doors.t, base: () => doors.base('lmstfy') };
}

describe('lmstfy: rate limits', () => {
  const { t, base } = doorInstall();
  const call = (method: string, pathname: string, o: { token?: string; auth?: boolean; body?: string } = {}): Promise<Res> => request(base(), method, pathname, o);
  const limit = (method: string, token: string, body?: object | string): Promise<Res> =>
    call(method, `/token/${NS}/${token}/limit`, { auth: true, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });

  it('answers 429 to the publish past `write` in the interval, and a publish that fails hands its unit back', async () => {
    expect(await limit('POST', TOKEN, { read: 0, write: 2, interval: 60 })).toMatchObject({ status: 201, body: { limiter: { read: 0, write: 2, interval: 60 } } });
    const q = fresh();
    expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'a' })).status).toBe(201);
    expect(await call('PUT', `/api/${NS}/${q}?delay=soon`, { token: TOKEN, body: 'b' })).toMatchObject({ status: 400, body: { error: 'invalid delay' } });
    expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'c' })).status).toBe(201);
    const over = await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'd' });
    expect(over).toMatchObject({ status: 429, body: { msg: `token(${TOKEN}) produce reach the limit rate, please retry later` } });
    expect(await call('PUT', `/api/${NS}/${q}/bulk`, { token: TOKEN, body: '[1]' })).toMatchObject({ status: 429 });
    // Consume and republish take nothing from `write`, and another token has its own limits.
    const job = await call('GET', `/api/${NS}/${q}`, { token: TOKEN });
    expect(job.status).toBe(200);
    expect((await call('PUT', `/api/${NS}/${q}/job/${job.body.job_id}`, { token: TOKEN, body: 'again' })).status).toBe(201);
    expect((await call('PUT', `/api/${NS}/${q}`, { token: OTHER_TOKEN, body: 'e' })).status).toBe(201);
    expect(await limit('DELETE', TOKEN)).toMatchObject({ status: 200, body: { msg: 'success' } });
    expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'f' })).status).toBe(201);
  });

  it('limits consume by `read`; a consume that finds no job hands its unit back', async () => {
    expect((await limit('POST', OTHER_TOKEN, { read: 1, write: 0, interval: 60 })).status).toBe(201);
    const q = fresh();
    expect(await call('GET', `/api/${NS}/${q}`, { token: OTHER_TOKEN })).toMatchObject({ status: 404, body: { msg: 'no job available' } });
    expect((await call('PUT', `/api/${NS}/${q}`, { token: OTHER_TOKEN, body: 'x' })).status).toBe(201);
    expect((await call('PUT', `/api/${NS}/${q}`, { token: OTHER_TOKEN, body: 'y' })).status).toBe(201);
    expect((await call('GET', `/api/${NS}/${q}`, { token: OTHER_TOKEN })).status).toBe(200);
    expect(await call('GET', `/api/${NS}/${q}?count=2`, { token: OTHER_TOKEN })).toMatchObject({
      status: 429,
      body: { msg: `token(${OTHER_TOKEN}) consume reach the limit rate, please retry later` },
    });
    expect((await call('GET', `/api/${NS}/${q}`, { token: TOKEN })).status).toBe(200);
    expect((await limit('DELETE', OTHER_TOKEN)).status).toBe(200);
  });

  it('reads, sets, changes and removes a limiter, behind Basic auth', async () => {
    const token = 'tok-crud-0123456789abcdef';
    expect((await call('POST', `/token/${NS}?description=crud&token=${token}`, { auth: true })).status).toBe(201);
    expect(await call('GET', `/token/${NS}/${token}/limit`)).toMatchObject({ status: 401 });
    expect(await call('POST', `/token/${NS}/${token}/limit`, { body: '{"read":1,"write":1,"interval":1}' })).toMatchObject({ status: 401 });
    expect(await call('GET', '/limits')).toMatchObject({ status: 401 });
    expect(await limit('GET', token)).toMatchObject({ status: 404, body: { error: 'the limiter was not found' } });
    expect(await limit('PUT', token, { read: 1, write: 1, interval: 1 })).toMatchObject({ status: 404, body: { error: 'the limiter was not found' } });
    expect(await limit('POST', token, { read: 5, write: 3, interval: 10 })).toEqual(expect.objectContaining({ status: 201, body: { limiter: { read: 5, write: 3, interval: 10 } } }));
    expect(await limit('POST', token, { read: 5, write: 3, interval: 10 })).toMatchObject({ status: 400, body: { error: 'the limiter has already existed' } });
    expect(await limit('GET', token)).toMatchObject({ status: 200, body: { read: 5, write: 3, interval: 10 } });
    expect(await limit('PUT', token, { write: 7, interval: 30 })).toMatchObject({ status: 200, body: { limiter: { read: 0, write: 7, interval: 30 } } });
    const all = await call('GET', '/limits', { auth: true });
    expect(all.status).toBe(200);
    expect(all.body).toContainEqual({ namespace: NS, token, read: 0, write: 7, interval: 30 });
    expect(await limit('DELETE', token)).toMatchObject({ status: 200, body: { msg: 'success' } });
    expect(await limit('GET', token)).toMatchObject({ status: 404 });
    // Revoking the token removes its limiter.
    expect((await limit('POST', token, { write: 1, interval: 5 })).status).toBe(201);
    expect((await call('DELETE', `/token/${NS}/${token}`, { auth: true })).status).toBe(204);
    expect(await limit('GET', token)).toMatchObject({ status: 404 });
    expect(await limit('POST', token, { write: 1, interval: 5 })).toMatchObject({ status: 404, body: { error: 'token not found' } });
  });

  it('refuses a bad limiter with a 400 and a one-line reason', async () => {
    const want = 'invalid limiter: the body must be JSON {"read":<n>,"write":<n>,"interval":<seconds>} with whole numbers';
    const cases: Array<[string, string]> = [
      ['{"read":-1,"write":1,"interval":5}', 'read should be >= 0'],
      ['{"read":1,"write":-2,"interval":5}', 'write should be >= 0'],
      ['{"read":1,"write":1,"interval":0}', 'interval should be > 0'],
      ['{"read":1,"write":1}', 'interval should be > 0'],
      ['{"read":1,"write":1,"interval":-5}', 'interval should be > 0'],
      ['not json', want],
      ['[1,2]', want],
      ['{"read":"1","write":1,"interval":5}', want],
      ['{"read":1.5,"write":1,"interval":5}', want],
      ['{"read":1,"write":1,"interval":99999999999}', want],
    ];
    for (const [given, error] of cases) {
      const r = await limit('POST', TOKEN, given);
      expect({ given, status: r.status, body: r.body }).toEqual({ given, status: 400, body: { error } });
    }
    expect(await call('POST', `/token/bad.ns/${TOKEN}/limit`, { auth: true, body: '{"interval":1}' })).toMatchObject({
      status: 400,
      body: { error: 'namespace name contains forbidden characters' },
    });
    expect(await limit('GET', TOKEN)).toMatchObject({ status: 404 });
  });

  it('keeps limiters across a restart of the web process, in config/lmstfy_limits.json (0600); the counts and the access log switch start afresh', async () => {
    expect((await call('POST', '/accesslog?status=enable', { auth: true })).body).toEqual({ status: 'enabled' });
    expect((await limit('POST', TOKEN, { read: 0, write: 1, interval: 3600 })).status).toBe(201);
    const q = fresh();
    expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'a' })).status).toBe(201);
    expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'b' })).status).toBe(429);
    const file = path.join(t().root, 'config/lmstfy_limits.json');
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ limits: { [NS]: { [TOKEN]: { read: 0, write: 1, interval: 3600 } } } });
    expect((fs.statSync(file).mode & 0o777).toString(8)).toBe('600');

    const before = webPid(t());
    process.kill(before, 'SIGKILL');
    await waitFor(
      async () => {
        try {
          return webPid(t()) !== before && (await call('GET', '/version')).status === 200;
        } catch {
          return false;
        }
      },
      15_000,
      'a new web process serving lmstfy',
    );
    expect(await limit('GET', TOKEN)).toMatchObject({ status: 200, body: { read: 0, write: 1, interval: 3600 } });
    expect((await call('GET', '/accesslog', { auth: true })).body).toEqual({ status: 'disabled' });
    expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'c' })).status).toBe(201);
    expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body: 'd' })).status).toBe(429);
    expect((await limit('DELETE', TOKEN)).status).toBe(200);
  });
});

/** The samples of a Prometheus text exposition, each checked against the format: `name{labels} value`. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/;
  for (const line of text.split('\n')) {
    if (line === '' || /^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* /.test(line)) continue;
    const m = sample.exec(line);
    expect(m, `not a Prometheus sample line: ${line}`).not.toBeNull();
    out.set(`${m![1]}${m![2] ?? ''}`, Number(m![3]));
  }
  return out;
}

describe('lmstfy: /metrics and the access log', () => {
  const { t, base } = doorInstall();
  const call = (method: string, pathname: string, o: { token?: string; auth?: boolean; body?: string } = {}): Promise<Res> => request(base(), method, pathname, o);

  it("shows a queue's publish, consume and ack counts, its sizes and the latencies in Prometheus text", async () => {
    const q = fresh('m');
    for (const body of ['a', 'b', 'c']) expect((await call('PUT', `/api/${NS}/${q}`, { token: TOKEN, body })).status).toBe(201);
    expect((await call('PUT', `/api/${NS}/${q}/bulk`, { token: TOKEN, body: '[1,2]' })).status).toBe(201);
    expect((await call('PUT', `/api/${NS}/${q}?delay=3600`, { token: TOKEN, body: 'later' })).status).toBe(201);
    const first = await call('GET', `/api/${NS}/${q}?ttr=600`, { token: TOKEN });
    expect((await call('DELETE', `/api/${NS}/${q}/job/${first.body.job_id}`, { token: TOKEN })).status).toBe(204);
    expect((await call('GET', `/api/${NS}/${q}?ttr=600`, { token: TOKEN })).status).toBe(200);
    // A job with one try and no TTR goes to the dead letter at once.
    expect((await call('GET', `/api/${NS}/${q}?ttr=0`, { token: TOKEN })).status).toBe(200);
    await waitFor(async () => (await call('GET', `/api/${NS}/${q}/deadletter/size`)).body.size === 1, 5000, 'a dead letter');
    // A queue with nothing waiting or in flight: its sizes come from its `stats`, which never load a queue.
    const idle = fresh('idle');
    expect((await call('PUT', `/api/${NS}/${idle}`, { token: TOKEN, body: 'dies' })).status).toBe(201);
    expect((await call('GET', `/api/${NS}/${idle}?ttr=0`, { token: TOKEN })).status).toBe(200);
    await waitFor(async () => (await call('GET', `/api/${NS}/${idle}/deadletter/size`)).body.size === 1, 5000, 'a dead letter');

    expect(await call('GET', '/metrics')).toMatchObject({ status: 401 });
    const r = await call('GET', '/metrics', { auth: true });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const m = samples(r.body as string);
    const labels = `namespace="${NS}",queue="${q}"`;
    expect(m.get(`lmstfy_published_jobs_total{${labels}}`)).toBe(6);
    expect(m.get(`lmstfy_consumed_jobs_total{${labels}}`)).toBe(3);
    expect(m.get(`lmstfy_acked_jobs_total{${labels}}`)).toBe(1);
    expect(m.get(`lmstfy_queue_jobs{${labels},state="ready"}`)).toBe(2);
    expect(m.get(`lmstfy_queue_jobs{${labels},state="delayed"}`)).toBe(1);
    expect(m.get(`lmstfy_queue_jobs{${labels},state="inflight"}`)).toBe(1);
    expect(m.get(`lmstfy_queue_jobs{${labels},state="dead"}`)).toBe(1);
    const idleLabels = `namespace="${NS}",queue="${idle}"`;
    expect(['ready', 'delayed', 'inflight', 'dead'].map((state) => m.get(`lmstfy_queue_jobs{${idleLabels},state="${state}"}`))).toEqual([0, 0, 0, 1]);
    expect(m.get(`lmstfy_request_duration_seconds_count{namespace="${NS}",op="publish"}`)).toBeGreaterThanOrEqual(4);
    expect(m.get(`lmstfy_request_duration_seconds_bucket{le="+Inf",namespace="${NS}",op="consume"}`)).toBeGreaterThanOrEqual(3);
    expect(r.body).toContain('# TYPE lmstfy_request_duration_seconds histogram');
  });

  it('logs each /api request when switched on, with no token, and nothing when off', async () => {
    const log = path.join(t().root, 'log/rq.log');
    const accessLines = (): Array<Record<string, unknown>> =>
      fs
        .readFileSync(log, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"lmstfy access"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(await call('GET', '/accesslog')).toMatchObject({ status: 401 });
    expect(await call('GET', '/accesslog', { auth: true })).toMatchObject({ status: 200, body: { status: 'disabled' } });
    expect(await call('POST', '/accesslog?status=enable')).toMatchObject({ status: 401 });
    expect(await call('POST', '/accesslog?status=on', { auth: true })).toMatchObject({
      status: 400,
      body: { error: 'invalid status: give status=enable or status=disable' },
    });
    const q = fresh('log');
    expect((await call('PUT', `/api/${NS}/${q}?token=${TOKEN}`, { body: 'quiet' })).status).toBe(201);
    expect(await call('POST', '/accesslog?status=enable', { auth: true })).toMatchObject({ status: 200, body: { status: 'enabled' } });
    expect(await call('GET', '/accesslog', { auth: true })).toMatchObject({ status: 200, body: { status: 'enabled' } });
    const seen = await call('PUT', `/api/${NS}/${q}?token=${TOKEN}`, { body: 'seen' });
    expect(seen.status).toBe(201);
    expect((await call('GET', `/api/${NS}/${q}/peek`, { token: 'wrong-token-0123456789' })).status).toBe(401);
    await waitFor(() => fs.existsSync(log) && accessLines().length >= 2, 10_000, 'two access lines');
    const lines = accessLines();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ method: 'PUT', path: `/api/${NS}/${q}`, status: 201, namespace: NS, remote: '127.0.0.1', level: 30 });
    expect(lines[0]!['request_id']).toBe(seen.headers.get('x-request-id'));
    expect(typeof lines[0]!['duration_ms']).toBe('number');
    expect(lines[1]).toMatchObject({ method: 'GET', path: `/api/${NS}/${q}/peek`, status: 401, namespace: NS });
    for (const line of lines) expect(JSON.stringify(line)).not.toMatch(/tok-|wrong-token/);

    // Off again: a request now leaves no line; lines are written in order, so the next one logged shows it.
    expect(await call('POST', '/accesslog?status=disable', { auth: true })).toMatchObject({ status: 200, body: { status: 'disabled' } });
    expect((await call('PUT', `/api/${NS}/${q}quiet`, { token: TOKEN, body: 'quiet again' })).status).toBe(201);
    expect((await call('POST', '/accesslog?status=enable', { auth: true })).status).toBe(200);
    expect((await call('GET', `/api/${NS}/${q}/size`)).status).toBe(200);
    await waitFor(() => accessLines().length >= 3, 10_000, 'a third access line');
    expect(accessLines().map((l) => l['path'])).toEqual([`/api/${NS}/${q}`, `/api/${NS}/${q}/peek`, `/api/${NS}/${q}/size`]);
    expect((await call('POST', '/accesslog?status=disable', { auth: true })).status).toBe(200);
  });
});

describe('lmstfy: access_log in the config section', () => {
  it('is a flag, off by default', () => {
    expect(parseLmstfySection({ port: 1 }).accessLog).toBe(false);
    expect(parseLmstfySection({ port: 1, access_log: true }).accessLog).toBe(true);
    expect(() => parseLmstfySection({ port: 1, access_log: 'yes' })).toThrow(RqError);
    expect(() => parseLmstfySection({ port: 1, access_log: 'yes' })).toThrow(/"protocols\.lmstfy\.access_log" must be true or false/);
  });
});

describe('lmstfy: a limiter window', () => {
  it('counts from the first request of a window for `interval` seconds; the next request after it opens an empty one', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-limits-'));
    try {
      const table = new LimitTable(dir);
      table.set(NS, TOKEN, { read: 0, write: 2, interval: 10 });
      const take = (at: number): string => {
        const r = table.take(NS, TOKEN, 'write', at);
        return r === 'limited' ? r : 'taken';
      };
      expect([take(1_000), take(5_000), take(10_999)]).toEqual(['taken', 'taken', 'limited']);
      // The window of the first request ends at 11 s: up to twice the limit across the edge.
      expect([take(11_000), take(11_001), take(11_002)]).toEqual(['taken', 'taken', 'limited']);
      expect(table.take(NS, TOKEN, 'read', 11_003)).not.toBe('limited');
      // A unit handed back after its window ended is not added to the next one.
      const late = table.take(NS, TOKEN, 'write', 30_000);
      expect(late).not.toBe('limited');
      expect(take(41_000)).toBe('taken');
      if (late !== 'limited') late();
      expect([take(41_001), take(41_002)]).toEqual(['taken', 'limited']);
      expect(new LimitTable(dir).get(NS, TOKEN)).toEqual({ read: 0, write: 2, interval: 10 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
