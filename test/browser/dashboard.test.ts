/**
 * The dashboard in a real browser: Playwright (playwright-core) driving Debian's
 * Chromium at /usr/bin/chromium against a real rq-mgr and web process. One operator's
 * walk through it: create a queue from the form, send a message, watch the live tail
 * colour the script's ANSI output and stop at `done`, find the message with the search
 * box, pause and resume the queue, and upload an attachment to a prepared message.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useBrowserPage } from '../helpers/browser.js';
import { REPO, shortId } from '../helpers/install.js';
import { rackTemps, sharedInstall } from '../helpers/web.js';

const { t, web } = sharedInstall();
const page = useBrowserPage();

/** Create queue `name` running the fixture `script` through the New Queue form. */
async function createQueue(name: string, script: string): Promise<void> {
  await page().goto(`${web().base}/`);
  await page().click('#new-queue a');
  await page().fill('input[name="queue[name]"]', name);
  await page().fill('input[name="queue[script]"]', `./scripts/${script}`);
  await page().fill('input[name="queue[exec_prefix]"]', '');
  await page().click('#new_queue_form button[type=submit]');
  await expect.poll(() => page().textContent('body')).toContain('queue created');
  expect(new URL(page().url()).pathname).toBe(`/q/${name}`);
}

describe('the dashboard in Chromium', () => {
  it('creates a queue, sends a message, and the live tail colours the output and stops at done', async () => {
    await createQueue('browser_tail', 'ansi-slow.sh');
    await page().click('a[href="/q/browser_tail/new_message"]');
    await page().fill('input[name="mesg[param2]"]', 'from the browser');
    await page().click('#mesg_submit_field input[type=submit], #mesg_submit_field button');
    await page().click('text=Open the message page');
    const id = shortId(new URL(page().url()).pathname);
    expect(id).toMatch(/^\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/);

    // The first part streams while the script is still running (it waits for `go`).
    const tail = page().locator('#tail-output');
    await expect.poll(() => tail.textContent(), { timeout: 15_000 }).toContain('green part one');
    expect(await t().state('browser_tail', id)).toBe('run');
    const red = tail.locator('span[style*="color"]', { hasText: 'red <b>bold?</b> & line' });
    expect(await red.count()).toBeGreaterThan(0);
    // The script's markup is shown as text, never parsed.
    expect(await tail.evaluate((el) => el.innerHTML)).toContain('red &lt;b&gt;bold?&lt;/b&gt; &amp; line');
    // ANSI bold (ESC[1m) is the only markup: the library's own <b>.
    expect(await tail.locator('b').allTextContents()).toEqual(['green part one']);

    fs.writeFileSync(path.join(t().queueDir('browser_tail'), 'run', id, 'job', 'go'), '');
    await expect.poll(() => tail.textContent(), { timeout: 15_000 }).toContain('blue part two');
    await expect.poll(() => page().textContent('#tail-state'), { timeout: 15_000 }).toContain('done');
    expect(await t().state('browser_tail', id)).toBe('done');
    expect(await tail.locator('span[style*="color"]', { hasText: 'blue part two' }).count()).toBeGreaterThan(0);

    fs.mkdirSync(path.join(REPO, 'test-results'), { recursive: true });
    await page().screenshot({ path: path.join(REPO, 'test-results/message-page.png'), fullPage: true });
  });

  it('finds a message with the search box by a param', async () => {
    await createQueue('browser_search', 'done.sh');
    const reply = (await (await web().postJson('/q/browser_search/new_message', { dest: 'browser_search', param1: 'needle-4711' })).json()) as [string, string];
    expect(reply[0]).toBe('ok');
    const id = shortId(reply[1]);
    await t().waitState('browser_search', id, 'done');

    await page().goto(`${web().base}/`);
    await page().fill('header input[type=search]', 'needle-4711');
    await page().press('header input[type=search]', 'Enter');
    const link = page().locator(`main a[href="/q/browser_search/${id}"]`).first();
    await link.waitFor({ timeout: 10_000 });
    await link.click();
    // The results page shows the needle too: only the message page's summary row proves the way there.
    await page().waitForURL(`**/q/browser_search/${id}`);
    const param1 = page().locator('table.msg-summary tr', { has: page().locator('td.key', { hasText: /^\s*param1\s*$/ }) });
    expect(await param1.locator('td').last().textContent()).toContain('needle-4711');
    expect(await page().textContent('#msg-state')).toBe('done');
  });

  it('pauses and resumes a queue from the queue page', async () => {
    await createQueue('browser_admin', 'done.sh');
    await page().click('.admin-form button[name=pause]');
    await expect.poll(() => page().textContent('#status')).toBe('PAUSE');
    expect(fs.existsSync(path.join(t().root, 'config/browser_admin.pause'))).toBe(true);
    expect(await page().textContent('#flash-notice')).toContain('Successfully paused queue browser_admin');
    await page().click('.admin-form button[name=resume]');
    await expect.poll(() => page().textContent('#status')).toBe('UP');
    expect(fs.existsSync(path.join(t().root, 'config/browser_admin.pause'))).toBe(false);
  });

  it('uploads an attachment to a prepared message and downloads it', async () => {
    await createQueue('browser_attach', 'done.sh');
    await page().goto(`${web().base}/q/browser_attach/new_message`);
    await page().check('input[name="mesg[_method]"][value=prep]');
    await page().click('#mesg_submit_field input[type=submit], #mesg_submit_field button');
    await page().click('text=Open the message page');
    const id = shortId(new URL(page().url()).pathname);
    expect(await t().state('browser_attach', id)).toBe('prep');

    const content = Buffer.from('hello from the browser\n');
    await page().setInputFiles('input[type=file][name=filedata]', { name: 'note.txt', mimeType: 'text/plain', buffer: content });
    await page().locator('input[type=file][name=filedata]').locator('xpath=ancestor::form').locator('[type=submit]').click();
    expect(await page().textContent('#flash-notice')).toContain('Attached message successfully');
    const link = page().locator(`a[href="/q/browser_attach/${id}/attach/note.txt"]`).first();
    await link.waitFor();
    const body = await (await web().get(`/q/browser_attach/${id}/attach/note.txt`)).text();
    expect(body).toBe(content.toString());
    expect(rackTemps(t())).toEqual([]);
  });
});
