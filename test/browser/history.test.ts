/**
 * The History pages in Chromium (Debian's, through playwright-core) against a real rq-mgr
 * and web process, after real runs that end in done and in err: a queue's page, reached
 * from the queue page, and the whole install's, reached from the overview, each draw their
 * uPlot charts (canvases, within the Content-Security-Policy: the helper fails a test on
 * any console error) and show the counts in their table; the range tabs switch the
 * period. With RQ_SCREENSHOTS=1 it also writes docs/screenshots/history-queue.png and
 * history-host.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useBrowserPage } from '../helpers/browser.js';
import { REPO, waitFor } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const { t, web } = sharedInstall({
  setup(root) {
    root.addQueue({ name: 'plain', script: 'done.sh' });
    root.addQueue({ name: 'failing', script: 'err.sh' });
  },
  // Written as soon as there is news, so the install's page (read from the files) has it.
  env: { RQ_HISTORY_FLUSH_MS: '0' },
  async ready(root) {
    const sent = [
      ...(await Promise.all([1, 2, 3].map((i) => root.send('plain', { param1: String(i) })))).map((id) => ['plain', id, 'done'] as const),
      ...(await Promise.all([1, 2].map(() => root.send('failing', {})))).map((id) => ['failing', id, 'err'] as const),
    ];
    for (const [queue, id, state] of sent) await root.waitState(queue, id, state);
  },
});
const page = useBrowserPage();
beforeEach(() => page().setDefaultTimeout(10_000));

/** Write a screenshot for the docs, when asked to (RQ_SCREENSHOTS=1). */
async function docShot(name: string): Promise<void> {
  if (process.env['RQ_SCREENSHOTS'] !== '1') return;
  fs.mkdirSync(path.join(REPO, 'docs/screenshots'), { recursive: true });
  await page().screenshot({ path: path.join(REPO, 'docs/screenshots', name), fullPage: true });
}

/** The History page shown draws its four charts (uPlot's canvases). */
async function expectCharts(): Promise<void> {
  await page().locator('#history-charts .uplot canvas').nth(3).waitFor();
  expect(await page().locator('#history-charts .uplot').count()).toBe(4);
}

describe('the History pages', () => {
  it("draws a queue's done and err and its times, linked from the queue page, by hour and by day", async () => {
    await page().goto(`${web().base}/q/plain`);
    await Promise.all([page().waitForNavigation(), page().click('#history-link')]);
    expect(new URL(page().url()).pathname).toBe('/q/plain/history');
    await expectCharts();
    expect(await page().textContent('#history-total .done')).toBe('3');
    expect(await page().textContent('#history-total .err')).toBe('0');
    expect(await page().textContent('#history-total')).toMatch(/ms|s/);
    await docShot('history-queue.png');
    await Promise.all([page().waitForNavigation(), page().click('a.tab:has-text("last day")')]);
    expect(new URL(page().url()).search).toBe('?range=day');
    await expectCharts();
    expect(await page().textContent('#history-total th')).toBe('the last day');
    expect(await page().textContent('#history-total .done')).toBe('3');
  });

  it("draws the whole install's history, summed over the queues, linked from the overview", async () => {
    await waitFor(
      async () => {
        const s = (await (await web().get('/history.json')).json()) as { summary: { done: number; err: number } };
        return s.summary.done === 3 && s.summary.err === 2;
      },
      10_000,
      'the queues to write their history',
    );
    await page().goto(`${web().base}/`);
    await Promise.all([page().waitForNavigation(), page().click('#history-link a')]);
    expect(new URL(page().url()).pathname).toBe('/history');
    await expectCharts();
    expect(await page().textContent('main h2')).toBe('History : all queues');
    expect(await page().textContent('#history-total .done')).toBe('3');
    expect(await page().textContent('#history-total .err')).toBe('2');
    await docShot('history-host.png');
    expect(fs.existsSync(path.join(t().queueDir('plain'), 'history.bin'))).toBe(true);
  });
});
