/**
 * Pull queues on the dashboard, in Chromium against a real rq-mgr, web process and lmstfy
 * front door: an lmstfy queue's own page (ready, delayed, leased and dead-lettered jobs,
 * made through the door; payload previews; respawn and delete through queue commands),
 * and the overview's kind and door marks, its groups and its kind filter. With
 * RQ_SCREENSHOTS=1 it also writes docs/screenshots/pull-queue.png and overview-groups.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Locator } from 'playwright-core';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { useBrowserPage } from '../helpers/browser.js';
import { REPO, sharedRoot, waitFor } from '../helpers/install.js';
import { startProtocols } from '../helpers/protocols.js';

const TOKENS = { test: ['tok-test-0123456789abcdef'], other: ['tok-other-0123456789abcdef'] };

const { t, started } = sharedRoot(async (root) => {
  root.addQueue({ name: 'plain', script: 'done.sh' });
  // A pull queue made by hand (no script, no door recorded): shown as "pull".
  fs.mkdirSync(root.queueDir('handmade'), { recursive: true });
  fs.writeFileSync(path.join(root.queueDir('handmade'), 'config.json'), JSON.stringify({ name: 'handmade', script: '', num_workers: 0 }));
  return startProtocols(root, { lmstfy: { tokens: TOKENS } });
});
const page = useBrowserPage();
beforeEach(() => page().setDefaultTimeout(10_000));
const web = (): string => started().web.base;

/** A call to the lmstfy door as namespace `ns`; the JSON body. */
async function lmstfy(method: string, pathname: string, body?: string | Buffer, ns: keyof typeof TOKENS = 'test'): Promise<Record<string, unknown>> {
  const res = await fetch(`${started().base('lmstfy')}${pathname}`, { method, headers: { 'X-Token': TOKENS[ns][0]! }, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  expect(res.status, text).toBeLessThan(300);
  return text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
}
const publish = async (q: string, body: string | Buffer, query = ''): Promise<string> => (await lmstfy('PUT', `/api/test/${q}?${query}`, body))['job_id'] as string;
const consume = async (q: string, query: string): Promise<string> => (await lmstfy('GET', `/api/test/${q}?${query}`))['job_id'] as string;

const JSON_PAYLOAD = '{"order":42,"items":["tea","milk"]}';
const BINARY_PAYLOAD = Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe, 0x41, 0x42]);

/** The jobs of lmstfy queue test/jobs (rq's `test.jobs`), by what they are, as the door names them. */
const jobs: Record<'dead' | 'leased' | 'json' | 'binary' | 'text' | 'delayed', string> = { dead: '', leased: '', json: '', binary: '', text: '', delayed: '' };

/** The short id (the dashboard's) of a job of test.jobs, from the door's peek. */
async function shortIdOf(jobId: string): Promise<string> {
  const reply = (await t().rpc('test.jobs', 'peek', { ref: jobId })) as [string, { id: string }];
  return reply[1].id;
}

/** Write a screenshot for the docs, when asked to (RQ_SCREENSHOTS=1). */
async function docShot(name: string): Promise<void> {
  if (process.env['RQ_SCREENSHOTS'] === '1') await page().screenshot({ path: path.join(REPO, 'docs/screenshots', name), fullPage: true });
}

/** The row of message `id` (ids have dots: no `#` selector). */
const row = (id: string): Locator => page().locator(`[id="msg-${id}"]`);

/** Text of the rows of the section table now shown. */
const rowsText = async (section: string): Promise<string[]> => page().locator(`#pull-${section} tbody tr`).allTextContents();

describe('a pull queue on the dashboard', () => {
  beforeAll(async () => {
    // Out of tries: a lease whose TTR is 0 ends at once, into the dead letter.
    jobs.dead = await publish('jobs', 'dead job', 'tries=1');
    expect(await consume('jobs', 'ttr=0')).toBe(jobs.dead);
    await waitFor(async () => (await lmstfy('GET', '/api/test/jobs/deadletter'))['deadletter_size'] === 1, 5000, 'the dead letter');
    jobs.leased = await publish('jobs', 'leased job', 'tries=3');
    expect(await consume('jobs', 'ttr=600')).toBe(jobs.leased);
    jobs.json = await publish('jobs', JSON_PAYLOAD);
    jobs.binary = await publish('jobs', BINARY_PAYLOAD);
    jobs.text = await publish('jobs', 'hello, plain text');
    jobs.delayed = await publish('jobs', 'later', 'delay=3600');
    await publish('work', 'x', '');
    await lmstfy('PUT', '/api/other/mail?', 'y', 'other');
  });

  it('records the door that made the queue in its config.json', async () => {
    const config = (await (await fetch(`${web()}/q/test.jobs/config.json`)).json()) as Record<string, unknown>;
    expect(config).toMatchObject({ name: 'test.jobs', script: '', door: 'lmstfy' });
  });

  it('shows ready jobs with their payloads (JSON pretty-printed, binary as hex, text as text) and no Run Now or New Message', async () => {
    await page().goto(`${web()}/q/test.jobs`);
    expect(await page().textContent('main h2')).toBe('RQ : test.jobs');
    expect(await page().textContent('#queue-kind')).toBe('lmstfy');
    for (const [section, n] of [['ready', '3'], ['delayed', '1'], ['leased', '1'], ['dead', '1']]) expect(await page().textContent(`#${section}-count`), section).toBe(n);
    const rows = await page().locator('#pull-ready tbody tr').all();
    expect(rows).toHaveLength(3);
    const json = row(await shortIdOf(jobs.json)).locator('.payload pre');
    expect(await json.textContent()).toBe(JSON.stringify(JSON.parse(JSON_PAYLOAD), null, 2));
    expect(await row(await shortIdOf(jobs.binary)).locator('.payload pre').textContent()).toBe(`0000  ${'00 01 02 ff fe 41 42'.padEnd(47)}  |.....AB|`);
    expect(await row(await shortIdOf(jobs.text)).locator('.payload pre').textContent()).toBe('hello, plain text');
    // The whole payload is one click away.
    const link = row(await shortIdOf(jobs.binary)).locator('a.payload-link');
    const whole = await fetch(`${web()}${await link.getAttribute('href')}`);
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(BINARY_PAYLOAD);
    expect(await page().locator('a', { hasText: 'New Message' }).count()).toBe(0);
    expect(await page().locator('button', { hasText: /run now/i }).count()).toBe(0);
    await docShot('pull-queue.png');
    // Nor on a ready job's own page: a worker takes it when it leases.
    await page().goto(`${web()}/q/test.jobs/${await shortIdOf(jobs.text)}`);
    expect(await page().locator('#msg-actions').textContent()).not.toMatch(/Run message/);
  });

  it('shows delayed jobs with their due time, and leased ones with owner, deadline and tries left', async () => {
    await page().goto(`${web()}/q/test.jobs?state=delayed`);
    const delayed = await rowsText('delayed');
    expect(delayed).toHaveLength(1);
    expect(delayed[0]).toContain(await shortIdOf(jobs.delayed));
    expect(delayed[0]).toContain('later');
    await page().goto(`${web()}/q/test.jobs?state=leased`);
    const leased = row(await shortIdOf(jobs.leased));
    expect(await leased.locator('.lease-owner').textContent()).toBe('lmstfy');
    // The TTR was 600 s: the deadline is about ten minutes after the lease.
    const until = Date.parse((await leased.locator('.lease-until').textContent())!.replace(' UTC', 'Z').replace(' ', 'T'));
    expect(until - Date.now()).toBeGreaterThan(500_000);
    expect(await leased.locator('.tries-left').textContent()).toBe('2');
  });

  it('respawns a dead job back to ready, with a confirmation and a flash', async () => {
    await page().goto(`${web()}/q/test.jobs?state=dead`);
    const id = await shortIdOf(jobs.dead);
    let asked = '';
    page().once('dialog', (d) => {
      asked = d.message();
      void d.accept();
    });
    await Promise.all([page().waitForNavigation(), row(id).locator('button', { hasText: 'respawn' }).click()]);
    expect(asked).toContain(id);
    expect(await page().textContent('#flash-notice')).toContain(`Message ${id} respawned`);
    expect(await page().textContent('#dead-count')).toBe('0');
    expect(await page().textContent('#ready-count')).toBe('4');
    expect((await lmstfy('GET', '/api/test/jobs/deadletter'))['deadletter_size']).toBe(0);
    await page().goto(`${web()}/q/test.jobs?state=ready`);
    expect(await row(id).count()).toBe(1);
  });

  it('deletes a job through the queue, with a confirmation and a flash', async () => {
    await page().goto(`${web()}/q/test.jobs`);
    const id = await shortIdOf(jobs.text);
    page().once('dialog', (d) => void d.accept());
    await Promise.all([page().waitForNavigation(), row(id).locator('button', { hasText: 'delete' }).click()]);
    expect(await page().textContent('#flash-notice')).toContain(`Message ${id} deleted`);
    expect(await row(id).count()).toBe(0);
    const peeked = await fetch(`${started().base('lmstfy')}/api/test/jobs/job/${jobs.text}`, { headers: { 'X-Token': TOKENS.test[0]! } });
    expect(peeked.status).toBe(404);
  });
});

describe('the pull queue buttons with bad input', () => {
  it('answers a form without an id 400 with the reason, and a message that is not there with a flash, not an error page', async () => {
    const web = started().web;
    const none = await web.postForm('/q/test.jobs/pull/delete', { back: '/q/test.jobs' });
    expect(none.status).toBe(400);
    expect(await none.text()).toContain('The form must send id, the message id');
    const gone = await web.follow(await web.postForm('/q/test.jobs/pull/respawn', { id: '20200101.0000.00.000.1', back: '/q/test.jobs?state=dead' }));
    expect(gone.status).toBe(200);
    expect(await gone.text()).toContain('Message 20200101.0000.00.000.1 is not in the dead letter (any more): nothing respawned');
    // A queue that runs a script has no pull buttons: the queue says why.
    const script = await web.follow(await web.postForm('/q/plain/pull/delete', { id: '20200101.0000.00.000.1', back: '/q/plain' }));
    expect(await script.text()).toMatch(/Message 20200101.0000.00.000.1 not deleted: queue plain runs a script/);
  });
});

describe('the overview with kinds and groups', () => {
  it('marks each queue with its kind or door and groups the rows: script, pull by door and lmstfy namespace, built-in', async () => {
    await waitFor(async () => (await (await fetch(`${web()}/q.json`)).text()).includes('other.mail'), 10_000, 'the queues to be listed');
    await page().goto(`${web()}/`);
    expect(await page().textContent('#kind-plain')).toBe('script');
    expect(await page().textContent('#kind-handmade')).toBe('pull');
    expect(await page().textContent('[id="kind-test.jobs"]')).toBe('lmstfy');
    // Group headers, each followed by its queues (a row's first word is its name).
    const shown = await page()
      .locator('#queue-list tr.group-sep, #queue-list tr.queue-row')
      .evaluateAll((trs) => trs.map((tr) => (tr.className === 'group-sep' ? `[${tr.textContent?.trim()}]` : tr.textContent?.trim().split(/\s+/)[0])));
    expect(shown).toEqual(['[script queues]', 'plain', '[pull queues]', 'handmade', '[lmstfy namespace other]', 'other.mail', '[lmstfy namespace test]', 'test.jobs', 'test.work']);
    await docShot('overview-groups.png');
  });

  it('filters by kind from the form, in the URL, with the name filter too', async () => {
    await page().goto(`${web()}/`);
    await page().selectOption('#queue-filter select[name=kind]', 'pull');
    await Promise.all([page().waitForNavigation(), page().click('#queue-filter button[type=submit]')]);
    expect(new URL(page().url()).searchParams.get('kind')).toBe('pull');
    const names = async (): Promise<string[]> => page().locator('#queue-list tr.queue-row td.qname a').allTextContents();
    expect(await names()).toEqual(['handmade', 'other.mail', 'test.jobs', 'test.work']);
    await page().goto(`${web()}/?kind=script`);
    expect(await names()).toEqual(['plain']);
    await page().goto(`${web()}/?kind=pull&filter=test.`);
    expect(await names()).toEqual(['test.jobs', 'test.work']);
    const bad = await fetch(`${web()}/?kind=nope`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("'kind' must be one of script, pull, builtin");
  });

  it('leaves /q.json as RQ has it: no kind or door in its rows', async () => {
    const body = (await (await fetch(`${web()}/q.json`)).json()) as { queues: Array<Record<string, unknown>> };
    for (const row of body.queues) expect(Object.keys(row)).toEqual(['name', 'status', 'ping', 'pid', 'uptime', 'counts', 'disk']);
  });
});
