/**
 * A message's life on its page, in Chromium (Debian's, through playwright-core) against a
 * real rq-mgr and web process: the timeline (its starts, status lines, exit and webhook,
 * read from the markers of `job/timeline.log`, with `stdio.log` left as RQ wrote it), and
 * the page kept current over the live tail's event stream while the run goes on and when
 * it ends, without a reload. With RQ_SCREENSHOTS=1 it also writes
 * docs/screenshots/message-timeline.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useBrowserPage } from '../helpers/browser.js';
import { REPO, shortId, waitFor, type TestRoot } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const { t, web } = sharedInstall({
  setup(root) {
    root.addQueue({ name: 'steps', script: 'two-steps.sh' });
    root.addQueue({ name: 'failing', script: 'sneaky.sh' });
    root.addQueue({ name: 'again', script: 'resend.sh' });
    // Where post-run webhooks are queued: here a queue that just finishes them.
    root.addQueue({ name: 'webhook', script: 'done.sh' });
  },
});
const page = useBrowserPage();
beforeEach(() => page().setDefaultTimeout(15_000));

/** Send a message to `queue` over HTTP; its short id. */
async function send(queue: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = (await (await web().postJson(`/q/${queue}/new_message`, { dest: queue, ...fields })).json()) as [string, string];
  expect(reply[0]).toBe('ok');
  return shortId(reply[1]);
}

/** Write `name` into a running message's job/ directory (the script waits for it). */
async function release(root: TestRoot, queue: string, id: string, name: string): Promise<void> {
  const status = (await root.rpc(queue, 'get_message_status', { msg_id: id })) as [string, { path: string }];
  fs.writeFileSync(path.join(root.root, status[1].path, 'job', name), '');
}

/** The timeline's entries as their text, in order. */
async function timeline(): Promise<string[]> {
  return (await page().locator('#msg-life li').allTextContents()).map((s) => s.replace(/\s+/g, ' ').trim());
}

/** The text of the page's action buttons. */
async function buttons(): Promise<string[]> {
  return (await page().locator('#msg-actions button').allTextContents()).map((s) => s.trim());
}

describe('the message page', () => {
  it('follows a run live: its status lines, then done, its exit in the timeline and the buttons of a finished message', async () => {
    const id = await send('steps', { src: 'life-test' });
    await t().waitState('steps', id, 'run');
    await page().goto(`${web().base}/q/steps/${id}`);
    // Gone after a reload: the page must change without one.
    await page().evaluate('window.notReloaded = true');
    await page().locator('#msg-status', { hasText: 'step one' }).waitFor();
    expect(await page().textContent('#msg-state')).toBe('run');
    expect(await buttons()).toContain('Destroy');
    await page().locator('#msg-elapsed', { hasText: /^running for \d+ s$/ }).waitFor();

    await release(t(), 'steps', id, 'go');
    await page().locator('#msg-status', { hasText: 'step two' }).waitFor();
    expect(await page().textContent('#msg-state')).toBe('run');
    await page().locator('#msg-life li', { hasText: 'done step two' }).waitFor();

    await release(t(), 'steps', id, 'go2');
    await page().locator('#msg-state', { hasText: 'done' }).waitFor();
    await page().locator('#msg-life li.tl-end').waitFor();
    expect(await page().evaluate('window.notReloaded')).toBe(true);
    expect(await page().textContent('#msg-status')).toBe('step two');
    const entries = await timeline();
    const at = (re: RegExp): number => entries.findIndex((e) => re.test(e));
    const order = [/Created src life-test/, /Started \(attempt 1\) pid \d+/, /Status run step one/, /Status done step two/, /Exited pid \d+, exit code 0, ran \d/, /Finished: done step two/].map(at);
    expect(order, entries.join('\n')).toEqual([...order].sort((a, b) => a - b));
    expect(order.every((i) => i >= 0), entries.join('\n')).toBe(true);
    const actions = await buttons();
    expect(actions).not.toContain('Destroy');
    expect(actions).toEqual(expect.arrayContaining(['Delete', 'Clone message']));
    expect(await page().textContent('#msg-elapsed')).toBe('');

    if (process.env['RQ_SCREENSHOTS'] === '1') {
      fs.mkdirSync(path.join(REPO, 'docs/screenshots'), { recursive: true });
      await page().screenshot({ path: path.join(REPO, 'docs/screenshots/message-timeline.png'), fullPage: true });
    }
  });

  it("shows an err message's exit code in its timeline", async () => {
    const id = await send('failing');
    await t().waitState('failing', id, 'err');
    await page().goto(`${web().base}/q/failing/${id}`);
    const entries = await timeline();
    expect(entries.some((e) => /^\S+ \S+ \S+ Exited pid \d+, exit code 1, ran /.test(e)), entries.join('\n')).toBe(true);
    expect(entries.some((e) => e.includes('Status done but not really')), entries.join('\n')).toBe(true);
    expect(entries.some((e) => e.includes('Finished: err')), entries.join('\n')).toBe(true);
  });

  it('shows each start of a resent message', async () => {
    const id = await send('again', { param1: '1' });
    await t().waitState('again', id, 'done');
    await page().goto(`${web().base}/q/again/${id}`);
    const entries = await timeline();
    expect(entries.filter((e) => / Started \(attempt \d\) /.test(e)).map((e) => /attempt \d/.exec(e)?.[0]), entries.join('\n')).toEqual(['attempt 1', 'attempt 2']);
    expect(entries.some((e) => e.includes('Status resend 0-again')), entries.join('\n')).toBe(true);
    expect(entries.filter((e) => e.includes('Exited')), entries.join('\n')).toHaveLength(2);
  });

  it('shows the starts of a message run before timeline.log, from the RQ START lines of its stdio.log', async () => {
    const id = await send('again', { param1: '1' });
    await t().waitState('again', id, 'done');
    const status = (await t().rpc('again', 'get_message_status', { msg_id: id })) as [string, { path: string }];
    fs.rmSync(path.join(t().root, status[1].path, 'job', 'timeline.log'));
    await page().goto(`${web().base}/q/again/${id}`);
    const entries = await timeline();
    expect(entries.filter((e) => / Started \(attempt \d\) pid \d+/.test(e)), entries.join('\n')).toHaveLength(2);
    expect(entries.some((e) => e.includes(' Status ') || e.includes(' Exited ')), entries.join('\n')).toBe(false);
  });

  it('links the webhook message made for a finished run, with its status', async () => {
    const id = await send('failing', { post_run_webhook: ['http://127.0.0.1:9/hook'] });
    await t().waitState('failing', id, 'err');
    const webhookDone = /Webhook queued http:\/\/127\.0\.0\.1:9\/hook message \(done - /;
    await waitFor(async () => {
      await page().goto(`${web().base}/q/failing/${id}`);
      return (await timeline()).some((e) => webhookDone.test(e));
    }, 10_000, 'the webhook message to be done');
    // The note went to timeline.log (served as a log of the message, like stdio.log), not to stdio.log.
    const log = async (name: string): Promise<string> => (await fetch(`${web().base}/q/failing/${id}/log/${name}`)).text();
    expect(await log('stdio.log')).toMatch(/^\d+ - \d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4} - RQ START - \S+\/sneaky\.sh\n$/);
    expect((await log('timeline.log')).split('\n').map((l) => /^\d+ - \S+ \S+ \S+ - RQ (\w+) - /.exec(l)?.[1] ?? l)).toEqual(['START', 'STATUS', 'EXIT', 'WEBHOOK', '']);
    const link = page().locator('#msg-life li.tl-webhook a');
    expect(await link.getAttribute('href')).toMatch(/^\/q\/webhook\/\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/);
    await link.click();
    expect(await page().textContent('#msg-state')).toBe('done');
  });
});
