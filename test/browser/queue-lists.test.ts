/**
 * The queue page's lists in Chromium against a real rq-mgr and web process: the filter
 * form narrows the rows by param and by free text, a sort by duration orders finished
 * runs, the URL holds the whole view (a reload shows the same rows), and the page size
 * and page jump work. With RQ_SCREENSHOTS=1 it writes docs/screenshots/queue-page.png.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { useBrowserPage } from '../helpers/browser.js';
import { REPO, shortId, waitFor } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const { t, web } = sharedInstall({
  setup(root) {
    root.addQueue({ name: 'jobs', script: 'sleep.sh', num_workers: 1 });
    root.addQueue({ name: 'many', script: 'done.sh', num_workers: 0 });
  },
});
const page = useBrowserPage();
beforeEach(() => page().setDefaultTimeout(10_000));

/** The ids of the rows shown, in order. */
async function shownIds(): Promise<string[]> {
  return page().locator('table.message-list tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id') ?? ''));
}

describe('queue page lists', () => {
  it('filters by param and by text, sorts by duration, and keeps the view in its URL', async () => {
    const sleeps: Array<[string, string]> = [['alpha-1', '0.2'], ['beta-2', '0.05'], ['alpha-3', '1.5'], ['gamma', '0.1'], ['beta-5', '0.4']];
    const ids: Record<string, string> = {};
    for (const [name, secs] of sleeps) ids[name] = shortId(await t().send('jobs', { param1: name, param2: secs, src: name.startsWith('beta') ? 'billing' : 'web' }));
    await waitFor(async () => ((await t().rpc('jobs', 'num_messages', {})) as { done: number }).done === 5, 20_000, 'five runs done');
    const base = `${web().base}/q/jobs`;
    await page().goto(`${base}?state=done`);
    expect(await shownIds()).toHaveLength(5);

    await page().fill('#list-filter input[name=param1]', 'alpha');
    await page().click('#list-filter button[type=submit]');
    await page().waitForURL(/param1=alpha/);
    expect((await shownIds()).sort()).toEqual([ids['alpha-1'], ids['alpha-3']].sort());
    expect(await page().textContent('.matching')).toContain('2 matching of 5');

    await page().fill('#list-filter input[name=param1]', '');
    await page().fill('#list-filter input[name=text]', 'gamm');
    await page().click('#list-filter button[type=submit]');
    await page().waitForURL(/text=gamm/);
    expect(await shownIds()).toEqual([ids['gamma']]);

    await page().fill('#list-filter input[name=text]', '');
    await page().selectOption('#list-filter select[name=sort]', '-duration');
    await page().click('#list-filter button[type=submit]');
    await page().waitForURL(/sort=-duration/);
    // The run that slept 1.5 s first; every row's duration at most the one above (a first run also waits for its worker to start).
    const sorted = await shownIds();
    expect(sorted[0]).toBe(ids['alpha-3']);
    expect([...sorted].sort()).toEqual(Object.values(ids).sort());
    const durations = await page().locator('td.duration').evaluateAll((cells) => cells.map((c) => Number(c.getAttribute('data-ms'))));
    expect(durations).toEqual([...durations].sort((a, b) => b - a));

    // The whole view is in the URL: a bookmark (here, a new load of it) shows the same rows.
    await page().goto(`${base}?state=done&src=billing&sort=duration`);
    const bookmarked = await shownIds();
    expect(bookmarked).toEqual([ids['beta-2'], ids['beta-5']]);
    await page().reload();
    expect(await shownIds()).toEqual(bookmarked);
    expect(await page().inputValue('#list-filter input[name=src]')).toBe('billing');
    expect(await page().locator(`input[type=checkbox][name=ids][value="${ids['beta-2']}"]`).getAttribute('form')).toBe('bulk-form');
    if (process.env['RQ_SCREENSHOTS'] === '1') {
      await page().goto(`${base}?state=done&sort=-duration`);
      fs.mkdirSync(path.join(REPO, 'docs/screenshots'), { recursive: true });
      await page().screenshot({ path: path.join(REPO, 'docs/screenshots/queue-page.png'), fullPage: true });
    }
  });

  it('pages by the size chosen, and jumps to a page', async () => {
    const made: string[] = [];
    for (let i = 0; i < 130; i++) made.push(shortId(await t().send('many', { param1: `n${i}` })));
    await page().goto(`${web().base}/q/many?state=que`);
    expect(await shownIds()).toEqual(made.slice(0, 50));
    await page().selectOption('#list-filter select[name=size]', '100');
    await page().click('#list-filter button[type=submit]');
    await page().waitForURL(/size=100/);
    expect(await shownIds()).toEqual(made.slice(0, 100));
    expect(await page().locator('.page-of').first().textContent()).toBe('page 1 of 2');

    await page().fill('.page-jump input[name=page]', '2');
    await page().click('.page-jump button[type=submit]');
    await page().waitForURL(/page=2/);
    expect(page().url()).toContain('size=100');
    expect(await shownIds()).toEqual(made.slice(100));
  });
});
