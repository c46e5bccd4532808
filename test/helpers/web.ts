/**
 * Test support for the web process: start rq-mgr (which starts the web) on a TestRoot
 * with a free port, then talk HTTP to it over a real socket: fetch with a cookie jar
 * (the flash rides a cookie across RQ's 303 redirects), forms, JSON and multipart
 * bodies, and raw requests for the HTTP-layer rules that fetch cannot send.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'vitest';
import { waitFor, type TestRoot } from './install.js';

export interface Web {
  port: number;
  /** `http://127.0.0.1:<port>` (no trailing slash; paths start with `/`). */
  base: string;
  /** GET or POST with the jar; redirects are not followed. */
  request(pathname: string, init?: RequestInit): Promise<Response>;
  get(pathname: string, headers?: Record<string, string>): Promise<Response>;
  /** POST application/x-www-form-urlencoded (string values, keys may be `a[b]`). */
  postForm(pathname: string, fields: Record<string, string> | [string, string][]): Promise<Response>;
  postJson(pathname: string, body: unknown): Promise<Response>;
  postMultipart(pathname: string, form: FormData): Promise<Response>;
  /** Follow a 303 with the jar; expects the status to be 303. */
  follow(res: Response): Promise<Response>;
  /** Send bytes as they are on a new connection; resolves with everything the server sent. */
  raw(bytes: string | Buffer): Promise<string>;
}

/** Write extra keys into the root's config/config.json. */
export function setMainConfig(t: TestRoot, extra: Record<string, unknown>): void {
  const file = path.join(t.root, 'config/config.json');
  fs.writeFileSync(file, JSON.stringify({ ...(JSON.parse(fs.readFileSync(file, 'utf8')) as object), ...extra }));
}

/** Start rq-mgr and the web process on a free port (config extras first), and wait for HTTP. */
export async function startWeb(t: TestRoot, extra: Record<string, unknown> = {}): Promise<Web> {
  const port = await t.usePort();
  setMainConfig(t, extra);
  const r = await t.bin('rq-mgr', ['start']);
  if (r.code !== 0) throw new Error(`rq-mgr start failed: ${r.stdout}${r.stderr}`);
  const base = `http://127.0.0.1:${port}`;
  const web = webClient(port);
  await waitFor(
    async () => {
      try {
        await fetch(`${base}/css/rq.css`);
        return true;
      } catch {
        return false;
      }
    },
    10_000,
    'the web process to answer',
  );
  return web;
}

export function webClient(port: number): Web {
  const base = `http://127.0.0.1:${port}`;
  const jar = new Map<string, string>();
  const keep = (res: Response): Response => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /max-age=0/i.test(c)) jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  };
  const request = async (pathname: string, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (jar.size > 0 && !headers.has('cookie')) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
    return keep(await fetch(base + pathname, { ...init, headers, redirect: 'manual' }));
  };
  return {
    port,
    base,
    request,
    get: (pathname, headers = {}) => request(pathname, { headers }),
    postForm: (pathname, fields) => request(pathname, { method: 'POST', body: new URLSearchParams(fields) }),
    postJson: (pathname, body) => request(pathname, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    postMultipart: (pathname, form) => request(pathname, { method: 'POST', body: form }),
    async follow(res) {
      expect(res.status).toBe(303);
      const loc = new URL(res.headers.get('location')!);
      return request(loc.pathname + loc.search);
    },
    raw: (bytes) =>
      new Promise((resolve, reject) => {
        const sock = net.connect(port, '127.0.0.1');
        const chunks: Buffer[] = [];
        sock.on('data', (c) => chunks.push(c));
        sock.on('error', reject);
        sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
        sock.write(bytes);
      }),
  };
}
