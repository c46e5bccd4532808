/**
 * Attacks from other sites' pages, in Debian's Chromium (Playwright) against a real
 * rq-mgr, its web process and the Cloudq door: DNS rebinding (Chromium's resolver maps
 * the attacker's name to 127.0.0.1, as a rebound DNS answer does; the attacker's page
 * itself is served by Playwright, as the attacker's server would before the rebinding),
 * and a cross-site form on another site. Over plain HTTP to such a name Chromium sends no
 * Sec-Fetch-* headers, and no Origin on a GET: what it really sends must be enough.
 * Chromium's own Local Network Access checks are turned off, as other and older browsers
 * have none.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sharedRoot } from '../helpers/install.js';
import { startProtocols } from '../helpers/protocols.js';

const CHROMIUM = '/usr/bin/chromium';
const REBIND = 'rebind.attacker.example';
const ATTACKER_PAGE = '<!DOCTYPE html><html><head><title>cute cats</title></head><body><p>cats</p></body></html>';

let browser: Browser;
let page: Page;

const shared = sharedRoot((t) => startProtocols(t, { cloudq: {} }, { config: { allowed_hosts: ['rq.example.com'] } }));

beforeAll(async () => {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`The browser tests need Debian's Chromium at ${CHROMIUM}: apt install chromium`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--host-resolver-rules=MAP ${REBIND} 127.0.0.1, MAP rq.example.com 127.0.0.1`,
      // Recent Chromium asks the user before a public page reaches a loopback address; other and older browsers do not.
      '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights',
    ],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

beforeEach(async () => {
  page = await browser.newPage();
});

afterEach(async () => {
  await page.close();
});

/** Open the attacker's page at `origin` (served here, as the attacker's own server would); later requests go to the real network. */
async function openAttackerPage(origin: string, html = ATTACKER_PAGE): Promise<void> {
  await page.route(`${origin}/`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: html }));
  await page.goto(`${origin}/`);
  await page.unrouteAll();
}

/** fetch() from the page: status and body text. */
function pageFetch(url: string, init: { method?: string; body?: string; type?: string } = {}): Promise<[number, string]> {
  return page.evaluate(async ({ url, init }) => {
    const res = await fetch(url, { method: init.method ?? 'GET', ...(init.body === undefined ? {} : { body: init.body, headers: { 'content-type': init.type ?? 'text/plain' } }) });
    return [res.status, await res.text()] as [number, string];
  }, { url, init });
}

describe('pages of other sites in Chromium', () => {
  it('a page whose name rebinds to 127.0.0.1 can neither read the web nor create a queue through it', async () => {
    const web = shared.started().web;
    await openAttackerPage(`http://${REBIND}:${web.port}`);
    const [readStatus, readBody] = await pageFetch('/q.json');
    expect(readStatus, readBody).toBe(421);
    expect(readBody).toBe(`421 - Misdirected request: this server is not called "${REBIND}" (add the name to allowed_hosts in config.json)\n`);
    const marker = path.join(shared.t().root, 'pwned');
    const form = new URLSearchParams({ 'queue[name]': 'rebound', 'queue[script]': './scripts/done.sh', 'queue[num_workers]': '1', 'queue[exec_prefix]': `touch ${marker};` });
    const [made] = await pageFetch('/new_queue', { method: 'POST', body: form.toString(), type: 'application/x-www-form-urlencoded' });
    expect(made).toBe(421);
    expect(fs.existsSync(shared.t().queueDir('rebound'))).toBe(false);
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('the same page cannot publish to the Cloudq door through the rebound name', async () => {
    const port = shared.started().port('cloudq');
    await openAttackerPage(`http://${REBIND}:${port}`);
    const [status, body] = await pageFetch('/rebound-cq', { method: 'POST', body: JSON.stringify({ job: { klass: 'X', args: [] } }) });
    expect(status, body).toBe(421);
    expect(JSON.parse(body)).toMatchObject({ status: 'error' });
    expect(fs.existsSync(shared.t().queueDir('rebound-cq'))).toBe(false);
  });

  it('a form on another site that posts to the Cloudq door is refused and creates no job', async () => {
    const port = shared.started().port('cloudq');
    const html = `<!DOCTYPE html><html><body><form method="post" action="http://127.0.0.1:${port}/cross-cq"><input name="job[klass]" value="X"><input name="job[args][]" value="a"><button>go</button></form></body></html>`;
    await openAttackerPage('http://evil.example', html);
    const [answer] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/cross-cq')), page.click('button')]);
    expect(answer.status()).toBe(403);
    expect(await answer.json()).toEqual({ status: 'error', message: 'Forbidden: a request from another site is refused' });
    expect(fs.existsSync(shared.t().queueDir('cross-cq'))).toBe(false);
  });

  it('the operator may browse by 127.0.0.1, localhost and a name in allowed_hosts', async () => {
    const web = shared.started().web;
    for (const host of ['127.0.0.1', 'localhost', 'rq.example.com']) {
      const res = await page.goto(`http://${host}:${web.port}/`);
      expect(res?.status(), host).toBe(200);
      expect(await page.textContent('#new-queue'), host).toContain('New Queue');
    }
  });
});
