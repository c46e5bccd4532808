/**
 * The dashboard's bulk actions in Chromium (Debian's, through playwright-core) against a
 * real rq-mgr and web process: checked err rows retried through the confirmation page,
 * the progress page following the job to its end; a filtered "all matching" delete; a
 * move to another queue; bad input answered with a 400 naming the field; and the web's
 * log line naming who asked. With RQ_SCREENSHOTS=1 it also writes
 * docs/screenshots/bulk-rows.png, bulk-confirm.png and bulk-progress.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useBrowserPage } from '../helpers/browser.js';
import { REPO, shortId, waitFor } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const DOC_SHOTS = path.join(REPO, 'docs/screenshots');

const { t, web } = sharedInstall({
  setup(root) {
    root.addQueue({ name: 'flaky', script: 'err.sh' });
    root.addQueue({ name: 'bulky', script: 'done.sh' });
    root.addQueue({ name: 'mover', script: 'err.sh' });
    root.addQueue({ name: 'target', script: 'done.sh' });
    for (const paused of ['bulky', 'target']) fs.writeFileSync(path.join(root.root, `config/${paused}.pause`), '');
  },
});
const page = useBrowserPage({ errorPages: true });
beforeEach(() => page().setDefaultTimeout(10_000));

/** Write a screenshot for the docs, when asked to (RQ_SCREENSHOTS=1). */
async function docShot(name: string): Promise<void> {
  if (process.env['RQ_SCREENSHOTS'] !== '1') return;
  fs.mkdirSync(DOC_SHOTS, { recursive: true });
  await page().screenshot({ path: path.join(DOC_SHOTS, name), fullPage: true });
}

/** Send a message to `queue` over HTTP; its short id. */
async function send(queue: string, fields: Record<string, unknown> = {}): Promise<string> {
  const reply = (await (await web().postJson(`/q/${queue}/new_message`, { dest: queue, ...fields })).json()) as [string, string];
  expect(reply[0]).toBe('ok');
  return shortId(reply[1]);
}

/** Confirm the action on the confirmation page now shown, and wait for its progress page to say it ended. */
async function confirmAndWait(count: number, shot?: string): Promise<void> {
  expect(await page().textContent('#bulk-confirm')).toContain(`${count} message`);
  if (shot) await docShot(shot);
  await Promise.all([page().waitForURL(/\/bulk\/[0-9a-f]+$/), page().click('#bulk-confirm')]);
  await page().locator('#bulk-state', { hasText: /^Ended/ }).waitFor();
  expect(await page().textContent('#bulk-done')).toBe(String(count));
  expect(await page().textContent('#bulk-failed')).toBe('0');
}

const counts = async (queue: string): Promise<Record<string, number>> => (await t().rpc(queue, 'num_messages', {})) as Record<string, number>;

describe('bulk actions', () => {
  it('retries two checked err messages after a confirmation, and the progress page ends with 2 done', async () => {
    const ids = [await send('flaky'), await send('flaky'), await send('flaky')];
    for (const id of ids) await t().waitState('flaky', id, 'err');
    // The script is fixed: a retried message now succeeds.
    t().reconfigure({ name: 'flaky', script: 'done.sh' });
    await page().goto(`${web().base}/q/flaky?state=err`);
    for (const id of ids.slice(0, 2)) await page().check(`input[name=ids][value="${id}"]`);
    await docShot('bulk-rows.png');
    await Promise.all([page().waitForURL(/\/q\/flaky\/bulk$/), page().click('#bulk-form button[value=retry]')]);
    expect(await page().textContent('#bulk-count')).toContain('Retry 2 messages');
    // Nothing happens before the confirmation.
    expect((await counts('flaky'))['err']).toBe(3);
    await confirmAndWait(2, 'bulk-confirm.png');
    await docShot('bulk-progress.png');
    for (const id of ids.slice(0, 2)) await t().waitState('flaky', id, 'done');
    expect(await t().state('flaky', ids[2]!)).toBe('err');
    await page().click('#bulk-back');
    expect(page().url()).toMatch(/\/q\/flaky\?state=err$/);
    // The web's log names who asked (no Basic auth: `-`), the queue, the op and how many.
    const log = fs.readFileSync(path.join(t().root, 'log/rq.log'), 'utf8');
    expect(log).toMatch(/"user":"-","queue":"flaky","op":"retry","state":"err","messages":2,"msg":"bulk action started"/);
    await waitFor(() => /"queue":"flaky","op":"retry","messages":2,"done":2,"skipped":0,"failed":0/.test(fs.readFileSync(path.join(t().root, 'log/rq.log'), 'utf8')));
  });

  it('deletes all messages matching the page filter, and only those', async () => {
    const keep = [await send('bulky', { param1: 'keep' }), await send('bulky', { param1: 'keep' })];
    for (let i = 0; i < 3; i++) await send('bulky', { param1: 'drop' });
    await page().goto(`${web().base}/q/bulky?state=que&param1=drop`);
    await page().check('#bulk-all');
    await Promise.all([page().waitForURL(/\/bulk$/), page().click('#bulk-form button[value=delete]')]);
    expect(await page().textContent('#bulk-count')).toContain('Delete 3 messages');
    await confirmAndWait(3);
    expect((await counts('bulky'))['que']).toBe(2);
    for (const id of keep) expect(await t().state('bulky', id)).toBe('que');
  });

  it('moves err messages to another queue, checked with the check-all box', async () => {
    const ids = [await send('mover', { param1: 'one' }), await send('mover', { param1: 'two' })];
    for (const id of ids) await t().waitState('mover', id, 'err');
    await page().goto(`${web().base}/q/mover?state=err`);
    await page().check('input[data-check-all]');
    await page().fill('#bulk-form input[name=dest_queue]', 'target');
    await Promise.all([page().waitForURL(/\/bulk$/), page().click('#bulk-form button[value=move]')]);
    expect(await page().textContent('#bulk-count')).toContain('to queue target');
    await confirmAndWait(2);
    expect(await counts('mover')).toMatchObject({ err: 0, que: 0 });
    expect((await counts('target'))['que']).toBe(2);
    const moved = (await t().rpc('target', 'messages', { state: 'que' })) as Array<{ msg_id: string }>;
    const params = await Promise.all(moved.map(async (m) => (await t().message('target', m.msg_id))['param1']));
    expect(params.sort()).toEqual(['one', 'two']);
  });

  it('answers bad input with a 400 that names the field, and does nothing on a GET', async () => {
    const html = { Accept: 'text/html' };
    const post = async (fields: Record<string, string>): Promise<[number, string]> => {
      const res = await web().request('/q/bulky/bulk', { method: 'POST', headers: { ...html, 'Content-Type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
      return [res.status, await res.text()];
    };
    expect(await post({ op: 'smash', state: 'que', all: '1' })).toEqual([400, expect.stringContaining('&#39;op&#39; must be one of retry, clone, delete, move')]);
    expect(await post({ op: 'retry', state: 'que', all: '1' })).toEqual([400, expect.stringContaining('&#39;op&#39; retry applies to messages in err, not in que')]);
    expect(await post({ op: 'move', state: 'que', all: '1', dest_queue: 'nowhere' })).toEqual([400, expect.stringContaining('&#39;dest_queue&#39;: no such queue')]);
    expect(await post({ op: 'delete', state: 'que' })).toEqual([400, expect.stringContaining('&#39;ids&#39;: no messages checked')]);
    expect(await post({ op: 'delete', state: 'que', all: '1', from: 'yesterday' })).toEqual([400, expect.stringContaining('&#39;from&#39; must be a date-time YYYY-MM-DDTHH:MM')]);
    expect((await web().get('/q/bulky/bulk', html)).status).toBe(404);
    expect((await web().get('/q/bulky/bulk/0123456789abcdef.json')).status).toBe(404);
    expect((await counts('bulky'))['que']).toBe(2);
  });
});
