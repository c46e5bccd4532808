/**
 * Test support for the browser tests: Debian's Chromium (/usr/bin/chromium) driven by
 * playwright-core, launched once for the calling file, and a new 1100×800 page for each
 * test. A test fails when its page threw or broke the Content-Security-Policy (console
 * errors, the favicon aside); a failing test leaves a screenshot in
 * test-results/screenshots/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, expect, onTestFailed } from 'vitest';
import { REPO } from './install.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = path.join(REPO, 'test-results/screenshots');

/**
 * The page of the running test. `errorPages`: the tests show error pages on purpose, so
 * Chromium's "Failed to load resource: the server responded with a status of 4xx" is
 * not an error (each test checks the statuses it expects).
 */
export function useBrowserPage(opts: { errorPages?: boolean } = {}): () => Page {
  const ignored = opts.errorPages ? /favicon|^Failed to load resource: the server responded with a status of 4\d\d/ : /favicon/;
  let browser: Browser;
  let page: Page;
  beforeAll(async () => {
    if (!fs.existsSync(CHROMIUM)) throw new Error(`The browser tests need Debian's Chromium at ${CHROMIUM}: apt install chromium`);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  beforeEach(async (ctx) => {
    page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    onTestFailed(async () => {
      fs.mkdirSync(SHOTS, { recursive: true });
      const file = path.join(SHOTS, `${ctx.task.name.replace(/\W+/g, '-')}.png`);
      await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
      console.error(`screenshot: ${file}\nbrowser errors: ${errors.join('\n') || 'none'}`);
    });
    return async () => {
      // No page may break the Content-Security-Policy or throw.
      expect(errors.filter((e) => !ignored.test(e))).toEqual([]);
      await page.close();
    };
  });
  return () => page;
}
