/**
 * Post-run webhooks end to end (docs/webhooks.md): a real install (bin/rq-install's
 * webhook queue, libexec/webhook_script), real queue processes, and a real HTTP receiver
 * on 127.0.0.1 in the test. What the receiver gets (the form `x_format=json&payload=…`),
 * RQ's status texts, retries with the count² backoff (its base set through the queue's
 * env_vars so the test retries fast), timeouts, the give-up after 15 resends, and the
 * queue engine's trigger: a message with `post_run_webhook` that ends done, relayed or
 * err (not one that is resent), and the check of `post_run_webhook` when it is created.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installBuiltins, setEnvVars } from '../helpers/builtin-queues.js';
import { TestRoot, useTestRoot, waitFor } from '../helpers/install.js';

interface Received {
  method: string;
  url: string;
  contentType: string | undefined;
  body: string;
}

/** An HTTP receiver: records every request and answers each with the next status (the last one repeats); `null` never answers. */
class Receiver {
  readonly requests: Received[] = [];
  private readonly server: http.Server;
  private readonly statuses: (number | null)[];

  constructor(statuses: (number | null)[]) {
    this.statuses = statuses;
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        this.requests.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'], body });
        const status = this.statuses[Math.min(this.requests.length, this.statuses.length) - 1];
        if (status !== null && status !== undefined) res.writeHead(status).end('answer\n');
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const root = useTestRoot();
let t: TestRoot;
const receivers: Receiver[] = [];
beforeEach(async () => {
  t = root();
  await installBuiltins(t);
});
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
});

async function receiver(...statuses: (number | null)[]): Promise<{ rx: Receiver; url: string }> {
  const rx = new Receiver(statuses);
  receivers.push(rx);
  return { rx, url: await rx.listen() };
}

async function startWebhook(envVars?: Record<string, string>): Promise<void> {
  if (envVars) setEnvVars(t, 'webhook', envVars);
  await t.start('webhook');
}

async function stdioLog(id: string): Promise<string> {
  const msg = await t.message('webhook', id);
  return fs.readFileSync(path.join(t.root, msg['path'] as string, 'job/stdio.log'), 'utf8');
}

describe('the webhook worker', () => {
  it('POSTs x_format=json&payload=<param2> to param1; a 2xx is done', async () => {
    const { rx, url } = await receiver(201);
    await startWebhook();
    const payload = '{"msg_id":"http://h/q/a/1","note":"a & b = c/d?"}';
    const id = await t.send('webhook', { param1: url, param2: payload });
    expect(await t.waitState('webhook', id, 'done')).toBe('done - successfull post 201');
    expect(rx.requests).toHaveLength(1);
    const [req] = rx.requests;
    expect(req).toMatchObject({ method: 'POST', url: '/hook', contentType: 'application/x-www-form-urlencoded' });
    expect(req!.body).toBe(new URLSearchParams({ x_format: 'json', payload }).toString());
    expect(Object.fromEntries(new URLSearchParams(req!.body))).toEqual({ x_format: 'json', payload });
  });

  it('retries a failed POST: resend count²×base, then done', async () => {
    const { rx, url } = await receiver(500, 500, 200);
    await startWebhook({ WEBHOOK_BACKOFF_SECS: '1' });
    const id = await t.send('webhook', { param1: url, param2: '{}' });
    expect(await t.waitState('webhook', id, 'done', 15_000)).toBe('done - successfull post 200');
    expect(rx.requests).toHaveLength(3);
    expect(await t.message('webhook', id)).toMatchObject({ count: 2 });
    const log = await stdioLog(id);
    expect(log).toContain(' - resend 0-Could not POST to URL: 500 Internal Server Error\n');
    expect(log).toContain(' - resend 1-Could not POST to URL: 500 Internal Server Error\n');
    expect(log).toContain(' - done successfull post 200\n');
  });

  it('waits count²×60 s by default before the next try', async () => {
    const { url } = await receiver(503);
    await startWebhook();
    const id = await t.send('webhook', { param1: url, param2: '{}', count: 2, max_count: 20 });
    const before = Date.now() / 1000;
    expect(await t.waitState('webhook', id, 'que')).toBe('que - 240-Could not POST to URL: 503 Service Unavailable');
    const msg = await t.message('webhook', id);
    expect(msg['count']).toBe(3);
    expect(Number(msg['due'])).toBeGreaterThanOrEqual(Math.floor(before) + 240);
  });

  it('a receiver that cannot be reached is retried with RQ’s text', async () => {
    const { rx, url } = await receiver(200);
    await rx.close();
    await startWebhook();
    const closed = await t.send('webhook', { param1: url, param2: '{}', count: 1 });
    expect(await t.waitState('webhook', closed, 'que')).toBe(`que - 60-Could not connect to or parse URL: ${url}`);
  });

  it('a URL that is not http or https is an err at once, not retried', async () => {
    await startWebhook();
    for (const url of ['not a url', 'ftp://127.0.0.1/hook']) {
      const id = await t.send('webhook', { param1: url, param2: '{}', count: 1 });
      expect(await t.waitState('webhook', id, 'err')).toBe(`err - not an http or https URL: ${url}`);
      expect(await t.message('webhook', id)).toMatchObject({ count: 1 });
    }
  });

  it('gives up on a receiver that does not answer within WEBHOOK_TIMEOUT_SECS, and tries again', async () => {
    const { rx, url } = await receiver(null, 204);
    await startWebhook({ WEBHOOK_TIMEOUT_SECS: '0.5', WEBHOOK_BACKOFF_SECS: '0' });
    const id = await t.send('webhook', { param1: url, param2: '{}' });
    expect(await t.waitState('webhook', id, 'done')).toBe('done - successfull post 204');
    expect(rx.requests).toHaveLength(2);
    const log = await stdioLog(id);
    expect(log).toContain(`cannot POST to ${url}: no answer within 0.5 s\n`);
    expect(log).toContain(` - resend 0-Could not connect to or parse URL: ${url}\n`);
  });

  it('fails after more than 15 resends: run and fail lines, then err', async () => {
    const { url } = await receiver(500);
    await startWebhook();
    const id = await t.send('webhook', { param1: url, param2: '{}', count: 16, max_count: 30 });
    expect(await t.waitState('webhook', id, 'err')).toBe('err - RQ_COUNT > 15 - failing');
    const log = await stdioLog(id);
    expect(log).toContain(' - run RQ_COUNT > 15 - failing\n');
    expect(log).toContain(' - fail RQ_COUNT > 15 - failing\n');
  });

  it.each<[string, string, string]>([
    ['WEBHOOK_BACKOFF_SECS', 'soon', 'WEBHOOK_BACKOFF_SECS must be a number of seconds, 0 or more, got "soon"'],
    // A POST needs some time.
    ['WEBHOOK_TIMEOUT_SECS', '0', 'WEBHOOK_TIMEOUT_SECS must be a number of seconds above 0, got "0"'],
  ])('a bad %s (%j) is an err that names it', async (variable, value, problem) => {
    const { rx, url } = await receiver(200);
    await startWebhook({ [variable]: value });
    const id = await t.send('webhook', { param1: url, param2: '{}' });
    expect(await t.waitState('webhook', id, 'err')).toBe(`err - bad webhook queue env_vars: ${problem}`);
    expect(rx.requests).toHaveLength(0);
  });
});

describe('post_run_webhook', () => {
  it('a message that ends done or err is POSTed to each of its webhooks as a snapshot', async () => {
    const { rx, url } = await receiver(200);
    await startWebhook();
    t.addQueue({ name: 'ok', script: 'done.sh' });
    t.addQueue({ name: 'bad', script: 'err.sh' });
    await t.start('ok');
    await t.start('bad');
    const done = await t.send('ok', { param1: 'p1', src: 'tester', post_run_webhook: [url] });
    const failed = await t.send('bad', { post_run_webhook: [`${url}?first`, `${url}?second`] });
    await waitFor(() => rx.requests.length === 3, 15_000, 'three webhook POSTs');

    const payloads = rx.requests.map((r) => ({ url: r.url, snapshot: JSON.parse(new URLSearchParams(r.body).get('payload')!) as Record<string, unknown> }));
    const byUrl = (u: string): Record<string, unknown> => payloads.find((p) => p.url === u)!.snapshot;
    const doneSnapshot = byUrl('/hook');
    expect(doneSnapshot).toMatchObject({
      msg_id: `http://127.0.0.1:3333/q/ok/${done}`,
      state: 'done',
      dest: 'ok',
      src: 'tester',
      param1: 'p1',
      count: 0,
      max_count: 15,
      orig_msg_id: `http://127.0.0.1:3333/q/ok/${done}`,
      post_run_webhook: [url],
    });
    expect(doneSnapshot).not.toHaveProperty('status');
    expect(doneSnapshot).not.toHaveProperty('_attachments');
    for (const u of ['/hook?first', '/hook?second']) {
      expect(byUrl(u)).toMatchObject({ msg_id: `http://127.0.0.1:3333/q/bad/${failed}`, state: 'err', dest: 'bad' });
      expect(byUrl(u)).not.toHaveProperty('status');
    }
    expect(rx.requests.every((r) => new URLSearchParams(r.body).get('x_format') === 'json')).toBe(true);
    await waitFor(async () => JSON.stringify(await t.rpc('webhook', 'num_messages', '')).includes('"done":3'), 10_000, 'the three webhook messages to be done');
    expect(rx.requests).toHaveLength(3);
  });

  it('a message that ends relayed is POSTed too; one that is resent is not, until it finishes', async () => {
    const { rx, url } = await receiver(200);
    await startWebhook();
    fs.writeFileSync(path.join(t.root, 'relays.sh'), '#!/bin/sh\necho "relayed http://elsewhere/q/x/1" >&3\n', { mode: 0o755 });
    t.addQueue({ name: 'relaying', script: './relays.sh' });
    t.addQueue({ name: 'again', script: 'resend.sh' });
    await t.start('relaying');
    await t.start('again');
    const relayed = await t.send('relaying', { post_run_webhook: [`${url}?relayed`] });
    // resend.sh resends once (→ que), then is done.
    const resent = await t.send('again', { param1: '1', post_run_webhook: [`${url}?again`] });
    await t.waitState('again', resent, 'done');
    await t.waitState('relaying', relayed, 'relayed');
    const webhookCounts = async (): Promise<Record<string, number>> => (await t.rpc('webhook', 'num_messages', '')) as Record<string, number>;
    await waitFor(async () => (await webhookCounts())['done'] === 2, 10_000, 'two webhook messages done');
    expect(await webhookCounts()).toEqual({ prep: 0, que: 0, run: 0, done: 2, err: 0, relayed: 0 });
    expect(rx.requests).toHaveLength(2);
    const snapshots = Object.fromEntries(rx.requests.map((r) => [r.url, JSON.parse(new URLSearchParams(r.body).get('payload')!) as Record<string, unknown>]));
    expect(snapshots['/hook?relayed']).toMatchObject({ msg_id: `http://127.0.0.1:3333/q/relaying/${relayed}`, state: 'relayed' });
    expect(snapshots['/hook?again']).toMatchObject({ msg_id: `http://127.0.0.1:3333/q/again/${resent}`, state: 'done', count: 1 });
  });

  // The snapshot is over Linux's limit for one environment variable: the engine gives
  // RQ_PARAM2 as '' (a spawn with it would fail with E2BIG) and the worker reads `../msg`.
  it('a snapshot over Linux’s 128 KiB limit for one environment variable is POSTed whole', async () => {
    const { rx, url } = await receiver(200);
    await startWebhook();
    t.addQueue({ name: 'ok', script: 'done.sh' });
    await t.start('ok');
    // Each param fits in the message's own run; the snapshot of both does not fit in one variable.
    const half = 'x'.repeat(100 * 1024);
    const id = await t.send('ok', { param1: half, param3: half, post_run_webhook: [url] });
    await t.waitState('ok', id, 'done');
    const finished = async (): Promise<Array<{ msg_id: string; status: string }>> =>
      ((await t.rpc('webhook', 'messages', { state: 'done', offset: 0 })) as Array<{ msg_id: string; status: string }>).concat(
        (await t.rpc('webhook', 'messages', { state: 'err', offset: 0 })) as Array<{ msg_id: string; status: string }>,
      );
    await waitFor(async () => (await finished()).length === 1, 10_000, 'the webhook message to finish');
    expect((await finished())[0]!.status).toBe('done - successfull post 200');
    expect(rx.requests).toHaveLength(1);
    expect(JSON.parse(new URLSearchParams(rx.requests[0]!.body).get('payload')!)).toMatchObject({ param1: half, param3: half, state: 'done' });
  });

  it('a post_run_webhook that is not an array of http(s) URLs is refused when the message is created', async () => {
    t.addQueue({ name: 'ok', script: 'done.sh' });
    await t.start('ok');
    // RQ stored a single URL and never called it.
    expect(await t.rpc('ok', 'create_message', { dest: 'ok', post_run_webhook: 'http://127.0.0.1/hook' })).toEqual([
      'fail',
      'Expected "post_run_webhook" to be an array of http or https URLs, got "http://127.0.0.1/hook"',
      'RQ_BAD_MESSAGE',
    ]);
    expect(await t.rpc('ok', 'num_messages', {})).toMatchObject({ prep: 0, que: 0, run: 0, done: 0 });
  });
});
