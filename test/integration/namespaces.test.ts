/**
 * lmstfy's token-protected namespaces stay closed across the other front doors, over real
 * HTTP and TCP against a running rq (rq-mgr, the web process serving every door, one
 * queue process per queue): Cloudq, RQMS and Workq refuse a queue of a protected
 * namespace, each in its own words, and leave it as it was (checked on the queue socket
 * and through lmstfy with the namespace's token); a door whose `queues` patterns list it
 * reaches it; an unprotected namespace is open to every door; a token minted at run time
 * closes its namespace at once, and revoking it opens it again; `auth: false` protects
 * nothing. Each describe shares one install.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { type TestRoot } from '../helpers/install.js';
import { sharedProtocols, type ProtocolName } from '../helpers/protocols.js';
import { clientError, NOT_FOUND, OK, workqClients, type InspectRecord, type Reply } from '../helpers/workq-client.js';

const TOKEN_B = 'token-of-nsB-0123456789';
const TOKEN_BB = 'token-of-nsBB-0123456789';
const ADMIN = { authorization: `Basic ${Buffer.from('admin:secret').toString('base64')}` };
const LONG_TTL = 600_000;

interface Res {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/** One HTTP call to a door; the body parsed as JSON when it is JSON. */
async function call(base: string, method: string, pathname: string, o: { body?: string; headers?: Record<string, string> } = {}): Promise<Res> {
  const res = await fetch(base + pathname, { method, headers: { ...o.headers }, ...(o.body !== undefined ? { body: o.body } : {}) });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // an RQMS phrase, or a 204
  }
  return { status: res.status, body, text };
}

/** The doors of one install, as the tests call them. */
function doors(sections: Partial<Record<ProtocolName, Record<string, unknown>>>) {
  const d = sharedProtocols(sections);
  const http = (name: ProtocolName) => (method: string, pathname: string, o?: { body?: string; headers?: Record<string, string> }) => call(d.base(name), method, pathname, o);
  return { t: d.t, lmstfy: http('lmstfy'), cloudq: http('cloudq'), rqms: http('rqms'), workq: workqClients(() => d.port('workq')) };
}

/** Publish through lmstfy with a token; the job id. */
async function lmstfyPublish(lmstfy: ReturnType<typeof doors>['lmstfy'], ns: string, q: string, token: string, body: string): Promise<string> {
  const r = await lmstfy('PUT', `/api/${ns}/${q}?tries=1`, { body, headers: { 'X-Token': token } });
  expect(r, r.text).toMatchObject({ status: 201 });
  return r.body.job_id as string;
}

/** A message as the queue socket shows it (peek by external or short id). */
async function peek(t: TestRoot, queue: string, ref: string): Promise<Record<string, unknown>> {
  const reply = (await t.rpc(queue, 'peek', { ref })) as [string, Record<string, unknown>];
  expect(reply[0]).toBe('ok');
  return reply[1];
}

function labels(r: Reply): string[] {
  if (r.type !== 'records') throw new Error(`expected inspect records, got ${JSON.stringify(r.text)}`);
  return r.records.map((rec: InspectRecord) => rec.label);
}

const cloudqJob = JSON.stringify({ job: { klass: 'Planted', args: [1] } });

describe('namespaces: a token-protected lmstfy namespace is closed to the other doors', () => {
  const { t, lmstfy, cloudq, rqms, workq } = doors({
    lmstfy: { tokens: { nsB: [TOKEN_B] }, accounts: { admin: 'secret' } },
    cloudq: { waitMs: 3000 },
    rqms: {},
    workq: {},
  });

  it('refuses every way in to nsB.xd, and the job stays there untouched', async () => {
    const q = 'nsB.xd';
    const jobId = await lmstfyPublish(lmstfy, 'nsB', 'xd', TOKEN_B, 'the secret job');
    const before = await peek(t(), q, jobId);
    expect(before).toMatchObject({ state: 'que', lease: null, count: 0 });
    // An open queue, so that `inspect queues` has something to list.
    expect((await cloudq('POST', '/open.listed', { body: cloudqJob })).status).toBe(200);

    const rqmsRefusal = { status: 403, text: expect.stringContaining('protected lmstfy namespace') };
    expect(await rqms('GET', `/${q}?count=5&time=30`)).toMatchObject({ ...rqmsRefusal, body: { error: true } });
    expect(await rqms('POST', `/${q}?id=planted`, { body: '{"x":1}' })).toMatchObject(rqmsRefusal);
    expect(await rqms('PUT', `/${q}/planted`, { body: '{"x":1}' })).toMatchObject(rqmsRefusal);
    expect(await rqms('DELETE', `/${q}`, { body: JSON.stringify([jobId, `1-${'0'.repeat(32)}`]) })).toMatchObject(rqmsRefusal);

    const cloudqRefusal = { status: 403, body: { status: 'error', message: 'queue belongs to a protected lmstfy namespace' } };
    expect(await cloudq('GET', `/${q}`)).toMatchObject(cloudqRefusal);
    expect(await cloudq('POST', `/${q}`, { body: cloudqJob })).toMatchObject(cloudqRefusal);
    expect(await cloudq('PUT', `/${q}`, { body: cloudqJob })).toMatchObject(cloudqRefusal);
    expect(await cloudq('DELETE', `/${q}/${before['id'] as string}`)).toMatchObject(cloudqRefusal);
    // A waiting reserve (waitMs) neither waits on nor makes a protected queue.
    expect(await cloudq('GET', '/nsB.never')).toMatchObject(cloudqRefusal);
    expect(fs.existsSync(t().queueDir('nsB.never'))).toBe(false);

    const c = await workq();
    const invalidName = clientError('Invalid Name');
    expect((await c.lease([q], 0)).text).toBe(invalidName);
    expect((await c.lease(['open.other', q], 0)).text).toBe(invalidName);
    expect((await c.lease([q], 2000)).text).toBe(invalidName);
    expect((await c.add(randomUUID(), q, 1000, LONG_TTL, 'planted')).text).toBe(invalidName);
    expect((await c.schedule(randomUUID(), q, 1000, LONG_TTL, '2099-01-01T00:00:00Z', 'planted')).text).toBe(invalidName);
    expect((await c.run(randomUUID(), q, 1000, 0, 'planted')).text).toBe(invalidName);
    expect((await c.inspect('queue', q)).text).toBe(NOT_FOUND);
    expect((await c.inspect('jobs', q, 0, 10)).text).toBe(NOT_FOUND);
    expect((await c.inspect('scheduled-jobs', q, 0, 10)).text).toBe(NOT_FOUND);
    const listed = labels(await c.inspect('queues', 0, 100));
    expect(listed).toContain('open.listed');
    expect(listed).not.toContain(q);
    // A refused lease name is not recorded as a lease-only name either.
    const namesFile = path.join(t().root, 'config/workq.names');
    expect(fs.existsSync(namesFile) ? fs.readFileSync(namesFile, 'utf8').split('\n') : []).not.toContain(q);

    // Nothing was leased, changed, deleted or planted: lmstfy with the token sees the one job as it was.
    expect(await peek(t(), q, jobId)).toEqual(before);
    const withToken = { headers: { 'X-Token': TOKEN_B } };
    expect(await lmstfy('GET', '/api/nsB/xd/size')).toMatchObject({ status: 200, body: { size: 1 } });
    expect(await lmstfy('GET', '/api/nsB/xd/peek', withToken)).toMatchObject({
      status: 200,
      body: { job_id: jobId, data: Buffer.from('the secret job').toString('base64'), remain_tries: 1 },
    });
    expect(await lmstfy('GET', '/api/nsB/xd?ttr=30', withToken)).toMatchObject({ status: 200, body: { job_id: jobId } });
  });

  it('leaves an unprotected namespace, a look-alike one and a name without a dot open to every door', async () => {
    for (const q of ['open.q', 'nsBx.q', 'nodot']) {
      expect((await cloudq('POST', `/${q}`, { body: cloudqJob })).status, q).toBe(200);
      const reserved = await cloudq('GET', `/${q}`);
      expect(reserved, q).toMatchObject({ status: 200, body: { job: { klass: 'Planted' } } });
      expect((await cloudq('DELETE', `/${q}/${reserved.body.job.id as string}`)).status, q).toBe(200);

      expect((await rqms('POST', `/${q}?id=item`, { body: '{"n":1}' })).status, q).toBe(201);
      const fetched = await rqms('GET', `/${q}?count=5&time=30`);
      expect(fetched.body.items, q).toHaveLength(1);
      expect((await rqms('DELETE', `/${q}`, { body: fetched.body.items[0].ticket })).status, q).toBe(200);

      const c = await workq();
      const id = randomUUID();
      expect((await c.add(id, q, 1000, LONG_TTL, 'w')).text, q).toBe(OK);
      const leased = await c.lease([q], 0);
      expect(leased.type === 'lease' && leased.job.id, q).toBe(id);
      expect((await c.complete(id, 'done')).text, q).toBe(OK);
      expect(labels(await c.inspect('queues', 0, 100))).toContain(q);
    }
  });

  it('closes a namespace the moment the admin route mints its first token, and opens it when that token is revoked', async () => {
    const c = await workq();
    const id = randomUUID();
    expect((await c.add(id, 'nsC.w', 1000, LONG_TTL, 'workq job')).text).toBe(OK);
    expect((await cloudq('POST', '/nsC.c', { body: cloudqJob })).status).toBe(200);
    expect((await rqms('POST', '/nsC.r?id=item', { body: '{"n":1}' })).status).toBe(201);
    const before = await peek(t(), 'nsC.w', id);

    const minted = await lmstfy('POST', '/token/nsC?description=closing', { headers: ADMIN });
    expect(minted.status, minted.text).toBe(201);
    const token = minted.body.token as string;

    expect((await c.inspect('job', id)).text).toBe(NOT_FOUND);
    expect((await c.result(id, 0)).text).toBe(NOT_FOUND);
    expect((await c.complete(id, 'x')).text).toBe(NOT_FOUND);
    expect((await c.fail(id, 'x')).text).toBe(NOT_FOUND);
    expect((await c.delete(id)).text).toBe(NOT_FOUND);
    expect((await c.lease(['nsC.w'], 0)).text).toBe(clientError('Invalid Name'));
    expect((await c.inspect('queue', 'nsC.w')).text).toBe(NOT_FOUND);
    expect(labels(await c.inspect('queues', 0, 100))).not.toContain('nsC.w');
    expect((await cloudq('GET', '/nsC.c')).status).toBe(403);
    expect((await rqms('GET', '/nsC.r?count=5')).status).toBe(403);
    expect(await peek(t(), 'nsC.w', id)).toEqual(before);

    expect((await lmstfy('DELETE', `/token/nsC/${token}`, { headers: ADMIN })).status).toBe(204);
    expect((await c.inspect('job', id)).type).toBe('records');
    expect(labels(await c.inspect('queues', 0, 100))).toContain('nsC.w');
    expect((await cloudq('GET', '/nsC.c')).body).toMatchObject({ job: { klass: 'Planted' } });
    expect((await rqms('GET', '/nsC.r?count=5')).body.items).toHaveLength(1);
    expect((await c.delete(id)).text).toBe(OK);
  });
});

describe('namespaces: a door whose queues patterns list a protected queue reaches it', () => {
  const { t, lmstfy, cloudq, rqms, workq } = doors({
    lmstfy: { tokens: { nsB: [TOKEN_B], nsBB: [TOKEN_BB] } },
    cloudq: { queues: ['nsB.*'] },
    rqms: { queues: ['nsB.*'] },
    workq: { queues: ['nsB.*'] },
  });

  it('serves nsB.* to each door, and still refuses nsBB.q, which the pattern does not match', async () => {
    for (const q of ['c', 'r', 'w']) await lmstfyPublish(lmstfy, 'nsB', q, TOKEN_B, `{"for":"${q}"}`);
    expect(await cloudq('GET', '/nsB.c')).toMatchObject({ status: 200, body: { job: { payload: { for: 'c' } } } });
    expect(await rqms('GET', '/nsB.r?count=5&time=30')).toMatchObject({ status: 200, body: { items: [{ value: { for: 'r' } }] } });
    const c = await workq();
    const leased = await c.lease(['nsB.w'], 0);
    expect(leased.type === 'lease' && leased.job.payload.toString()).toBe('{"for":"w"}');
    expect(labels(await c.inspect('queues', 0, 100))).toEqual(expect.arrayContaining(['nsB.c', 'nsB.r', 'nsB.w']));

    const jobId = await lmstfyPublish(lmstfy, 'nsBB', 'q', TOKEN_BB, 'not for you');
    const before = await peek(t(), 'nsBB.q', jobId);
    expect((await cloudq('GET', '/nsBB.q')).status).toBe(403);
    expect((await rqms('GET', '/nsBB.q?count=5')).status).toBe(403);
    expect((await c.lease(['nsBB.q'], 0)).text).toBe(clientError('Invalid Name'));
    expect(labels(await c.inspect('queues', 0, 100))).not.toContain('nsBB.q');
    expect(await peek(t(), 'nsBB.q', jobId)).toEqual(before);
  });

  it('keeps the token routes off without accounts: no token is shown, none is minted', async () => {
    const shown = await lmstfy('GET', '/token/nsB');
    expect(shown.status).toBe(403);
    expect(shown.text).not.toContain(TOKEN_B);
    expect((await lmstfy('POST', '/token/nsB?description=mine')).status).toBe(403);
    expect((await lmstfy('POST', '/token/nsFree?description=mine')).status).toBe(403);
    // nsFree stays unprotected: Cloudq still reaches it.
    expect((await cloudq('POST', '/nsFree.q', { body: cloudqJob })).status).toBe(200);
  });
});

describe('namespaces: lmstfy with auth false (dev mode) protects nothing', () => {
  const { lmstfy, cloudq } = doors({ lmstfy: { auth: false, tokens: { nsB: [TOKEN_B] } }, cloudq: {} });

  it('lets the other doors reach a namespace with tokens, and opens the token routes without accounts', async () => {
    const jobId = await lmstfyPublish(lmstfy, 'nsB', 'dev', 'any', 'open');
    expect((await cloudq('GET', '/nsB.dev')).body).toMatchObject({ job: { payload: 'open' } });
    expect(jobId).toBeTruthy();
    expect(await lmstfy('GET', '/token/nsB')).toMatchObject({ status: 200, body: { tokens: { [TOKEN_B]: expect.any(String) } } });
    expect((await lmstfy('POST', '/token/nsD?description=dev')).status).toBe(201);
  });
});
