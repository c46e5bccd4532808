/**
 * The dashboard's pages that were broken, each in Chromium (Debian's, through
 * playwright-core) against a real rq-mgr and web process: a pull queue whose name has a
 * dot (lmstfy's `test/q` is the queue `test.q`), refusals shown on a styled page with
 * their reason, the admin form's `oper=` field, the flash after creating a queue, the
 * overview's layout (err colour, cron entries, admin buttons, a phone's width), the disk
 * table's counts, the version line, and Run Now on a cron entry that is skipped. With
 * RQ_SCREENSHOTS=1 it also writes the screenshots of docs/screenshots/ (a plain run leaves
 * the tree as it was).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Locator } from 'playwright-core';
import { beforeEach, describe, expect, it } from 'vitest';
import { useBrowserPage } from '../helpers/browser.js';
import { REPO, shortId } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const DOC_SHOTS = path.join(REPO, 'docs/screenshots');
/** Write a screenshot for the docs, when asked to (RQ_SCREENSHOTS=1). */
async function docShot(name: string, fullPage = false): Promise<void> {
  if (process.env['RQ_SCREENSHOTS'] !== '1') return;
  fs.mkdirSync(DOC_SHOTS, { recursive: true });
  await page().screenshot({ path: path.join(DOC_SHOTS, name), fullPage });
}
const PACKAGE_VERSION = (JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
/** The dashboard's red (`--red` in rq.css). */
const RED = 'rgb(198, 40, 40)';
const BAD_CRON = '61 * * * *';

const { t, web } = sharedInstall({
  setup(root) {
    root.addQueue({ name: 'plain', script: 'done.sh' });
    root.addQueue({ name: 'failing', script: 'err.sh' });
    root.addQueue({ name: 'waiting', script: 'wait-go.sh' });
    root.addQueue({ name: 'crony', script: 'done.sh', schedule: [{ cron: BAD_CRON, param1: 'skipped' }, { cron: '0 0 1 1 *', param1: 'new year' }] });
    root.addQueue({ name: 'held', script: 'done.sh' });
    fs.writeFileSync(path.join(root.root, 'config/held.pause'), '');
    // A pull queue as lmstfy's door makes it for namespace `test`, queue `q`.
    fs.mkdirSync(root.queueDir('test.q'), { recursive: true });
    fs.writeFileSync(path.join(root.queueDir('test.q'), 'config.json'), JSON.stringify({ name: 'test.q', script: '', num_workers: 1 }));
  },
});
const page = useBrowserPage({ errorPages: true });
beforeEach(() => page().setDefaultTimeout(10_000));

/** Send a message to `queue` over HTTP; its short id. */
async function send(queue: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = (await (await web().postJson(`/q/${queue}/new_message`, { dest: queue, ...fields })).json()) as [string, string];
  expect(reply[0]).toBe('ok');
  return shortId(reply[1]);
}

/** The page is one of the dashboard's (the layout and its stylesheet) and says `status` and `reason`. */
async function expectStyledError(status: number, reason: RegExp): Promise<void> {
  expect(await page().locator('link[rel=stylesheet]').getAttribute('href')).toBe('/css/rq.css');
  expect(await page().locator('header.topbar').count()).toBe(1);
  expect(await page().textContent('main h2')).toContain(String(status));
  expect(await page().textContent('main .reason')).toMatch(reason);
}

/**
 * Page-side code is given as text: it runs in Chromium, and the tests are typed for Node,
 * without the DOM's names.
 */
const SUBMIT_FORM = `([to, values]) => {
  const form = document.createElement('form');
  form.method = 'post';
  form.action = to;
  for (const [name, value] of Object.entries(values)) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.append(input);
  }
  document.body.append(form);
  form.submit();
}`;

/** What the page-side code below uses of the browser's globals. */
interface PageGlobals {
  getComputedStyle(el: unknown): Record<string, string>;
}

/** An element's computed style property, read in the page. */
function styleOf(locator: Locator, property: 'color' | 'lineHeight'): Promise<string> {
  return locator.evaluate((el, p) => (globalThis as unknown as PageGlobals).getComputedStyle(el)[p] ?? '', property);
}

/** Submit a form of `fields` to `action` from the page now shown, as a browser sends it. */
async function submitForm(action: string, fields: Record<string, string>): Promise<void> {
  await Promise.all([page().waitForNavigation(), page().evaluate(`(${SUBMIT_FORM})(${JSON.stringify([action, fields])})`)]);
}

/** A message page that does not offer `button`; its form (`<page>/<action>`) posted anyway gets a styled 409 with `reason`. */
async function refusedAction(messagePage: string, action: string, button: string, reason: RegExp): Promise<void> {
  await page().goto(`${web().base}${messagePage}`);
  expect(await page().locator('#msg-actions').textContent()).not.toContain(button);
  const answer = page().waitForResponse((r) => r.url().endsWith(`/${action}`));
  await submitForm(`${messagePage}/${action}`, {});
  expect((await answer).status()).toBe(409);
  await expectStyledError(409, reason);
}

describe('the dashboard pages that were broken', () => {
  it('serves a pull queue whose name has a dot (lmstfy test/q) as page, .json and .txt, linked from the overview', async () => {
    const reply = await t().rpc('test.q', 'publish', { payload: Buffer.from('hello').toString('base64') });
    expect(JSON.stringify(reply)).toMatch(/"id"/);
    await page().goto(`${web().base}/`);
    await page().click('#queue-list a[href="/q/test.q"]');
    expect(await page().textContent('main h2')).toBe('RQ : test.q');
    expect(await page().textContent('#ready-count')).toBe('1');
    const json = await page().goto(`${web().base}/q/test.q.json`);
    expect(json?.status()).toBe(200);
    const body = (await json!.json()) as { status: string; que_size: number; messages: { que: unknown[] } };
    expect(body.que_size).toBe(1);
    expect(body.messages.que).toHaveLength(1);
    const text = await page().goto(`${web().base}/q/test.q.txt`);
    expect(text?.status()).toBe(200);
    expect(await text!.text()).toContain('que: 1\n');
    // RQ's own split still holds for a queue without a dot.
    expect((await (await web().get('/q/plain.json')).json()) as object).toHaveProperty('status', 'UP');
  });

  it('offers Run Now and Clone only where they work, and shows a refused one and a bad admin operation on a styled page with the reason (4xx, not a bare 500)', async () => {
    const failed = await send('failing');
    await t().waitState('failing', failed, 'err');
    // The page offers neither where they cannot work; a form posted anyway meets the styled refusal.
    await refusedAction(`/q/failing/${failed}`, 'run_now', 'Run message', /msg not in runnable state/);

    const running = await send('waiting');
    await t().waitState('waiting', running, 'run');
    await refusedAction(`/q/waiting/${running}`, 'clone', 'Clone message', /cannot clone message in run state/);
    await docShot('error-page.png');
    fs.writeFileSync(path.join(t().queueDir('waiting'), 'run', running, 'job', 'go'), '');

    // The admin form's fields: RQ's `pause=1` and, beyond RQ, `oper=pause`; anything else is a 400 that names them.
    await page().goto(`${web().base}/q/plain`);
    await submitForm('/q/plain/adminoper', { oper: 'pause', back: '/q/plain' });
    expect(await page().textContent('#flash-notice')).toContain('Successfully paused queue plain');
    expect(await page().textContent('#status')).toBe('PAUSE');
    await submitForm('/q/plain/adminoper', { oper: 'resume', back: '/q/plain' });
    expect(await page().textContent('#status')).toBe('UP');
    await submitForm('/q/plain/adminoper', { oper: 'nap', back: '/q/plain' });
    await expectStyledError(400, /oper=pause\|resume\|down\|up.*pause=1/);
  });

  it('says "New queue created" after the form, not the form and reply dumped', async () => {
    await page().goto(`${web().base}/`);
    await page().click('#new-queue a');
    await page().fill('input[name="queue[name]"]', 'fresh');
    await page().fill('input[name="queue[script]"]', './scripts/done.sh');
    await page().fill('input[name="queue[exec_prefix]"]', '');
    await page().click('#new_queue_form button[type=submit]');
    await page().waitForURL('**/q/fresh');
    expect(await page().textContent('#flash-notice')).toBe('New queue created: fresh');
  });

  it('lays out the overview: err red only above 0, cron entries on their own line, admin buttons in a row, counts inside a phone', async () => {
    const failed = await send('failing');
    await t().waitState('failing', failed, 'err');
    await page().goto(`${web().base}/`);
    const colour = (id: string): Promise<string> => styleOf(page().locator(`#${id}`), 'color');
    expect(await colour('err-plain')).not.toBe(RED);
    expect(await colour('err-failing')).toBe(RED);

    // Each cron entry (with its error) takes one line across the table, not many in the name column.
    const table = (await page().locator('#queue-list').boundingBox())!;
    const lineHeight = parseFloat(await styleOf(page().locator('#queue-list .schedule').first(), 'lineHeight'));
    for (const entry of await page().locator('#queue-list .schedule').all()) {
      const box = (await entry.boundingBox())!;
      expect(box.width).toBeGreaterThan(table.width / 2);
      expect(box.height).toBeLessThan(lineHeight * 2.5);
    }
    expect(await page().textContent('#queue-list .cron-error')).toContain('61');

    // The admin buttons of a row stand on one line.
    const tops = await page().locator('#row-plain td.admin button').evaluateAll((els) => els.map((el) => Math.round(el.getBoundingClientRect().top)));
    expect(tops.length).toBeGreaterThanOrEqual(3);
    expect(new Set(tops).size).toBe(1);
    const rights = await page().locator('#row-plain td.admin button').evaluateAll((els) => els.map((el) => el.getBoundingClientRect().right));
    expect(Math.max(...rights)).toBeLessThanOrEqual(1100);
    await docShot('overview.png', true);

    // On a phone every count is inside the screen.
    await page().setViewportSize({ width: 390, height: 844 });
    await page().reload();
    for (const s of ['prep', 'que', 'run', 'err', 'done', 'relayed']) {
      const box = (await page().locator(`#${s}-plain`).boundingBox())!;
      expect(box.x, s).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width, s).toBeLessThanOrEqual(390);
    }
    expect(await page().evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await docShot('overview-phone.png', true);
  });

  it("counts the disk table's messages as the tabs do, and says when the sizes were measured", async () => {
    await page().goto(`${web().base}/q/held`);
    await expect.poll(async () => (await page().reload(), page().locator('#disk-total').count()), { timeout: 15_000 }).toBe(1);
    for (let i = 0; i < 61; i++) await send('held');
    await page().reload();
    expect(await page().textContent('#que-count')).toBe('61');
    expect(await page().textContent('#disk-que-messages')).toBe('61');
    expect(await page().textContent('.disk-usage')).toMatch(/sizes measured \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
  });

  it("shows rq's own version and RQ's apart; /q.json keeps RQ's", async () => {
    await page().goto(`${web().base}/`);
    expect(await page().textContent('#version')).toBe(`v${PACKAGE_VERSION}`);
    expect(await page().textContent('#rq-compat')).toBe('RQ 1.18.3 compatible');
    expect(((await (await web().get('/q.json')).json()) as { version: string }).version).toBe('1.18.3');
  });

  it('refuses Run Now on a cron entry that is skipped, with the reason, and makes no message', async () => {
    await page().goto(`${web().base}/q/crony`);
    const bad = page().locator('.schedule', { hasText: BAD_CRON }).locator('button');
    expect(await bad.isDisabled()).toBe(true);
    // A page shown before the entry went bad still has the button enabled: the server refuses.
    await bad.evaluate((b) => b.removeAttribute('disabled'));
    const reply = page().waitForResponse((r) => r.url().endsWith('/new_message'));
    await bad.click();
    expect((await reply).status()).toBe(400);
    await expectStyledError(400, /Not run: schedule entry 1 \("61 \* \* \* \*"\): .*61.* skips this entry/);
    const counts = (await (await web().get('/q/crony.json')).json()) as Record<string, unknown>;
    expect([counts['que_size'], counts['run_size'], counts['done_size']]).toEqual([0, 0, 0]);

    // The good entry still runs now.
    await page().goto(`${web().base}/q/crony`);
    await page().locator('.schedule', { hasText: '0 0 1 1 *' }).locator('button').click();
    expect(await page().textContent('#flash-notice')).toMatch(/^Created message /);
  });
});
