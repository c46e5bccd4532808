/**
 * Test support for the web process: start rq-mgr (which starts the web) on a TestRoot
 * with a free port, or the web process on its own (no rq-mgr, as a stale install has
 * it), then talk HTTP to it over a real socket: fetch with a cookie jar (the flash rides
 * a cookie across RQ's 303 redirects), forms, JSON and multipart bodies, and raw
 * requests for the HTTP-layer rules that fetch cannot send (rawRequest). `sharedInstall`
 * gives the tests of a describe one install, removed after it when every test passed
 * and kept (its path printed) when one failed.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { expect } from 'vitest';
import { REPO, sharedRoot, type TestRoot, waitFor } from './install.js';

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

/** The upload temp files (`RackMultipart-*`) left in the root's tmpdir. */
export function rackTemps(t: TestRoot): string[] {
  return fs.readdirSync(path.join(t.root, 'tmp')).filter((n) => n.startsWith('RackMultipart'));
}

/** Wait until the web process serves its stylesheet. */
async function untilServing(web: Web): Promise<void> {
  await waitFor(
    async () => {
      try {
        return (await fetch(`${web.base}/css/rq.css`)).status > 0;
      } catch {
        return false;
      }
    },
    10_000,
    'the web process to answer',
  );
}

/**
 * Start rq-mgr and the web process on a free port (config extras first, `env` added to
 * rq-mgr's environment, which the web inherits), and wait for HTTP.
 */
export async function startWeb(t: TestRoot, extra: Record<string, unknown> = {}, env: Record<string, string> = {}): Promise<Web> {
  const port = await t.usePort();
  t.setMainConfig(extra);
  const r = await t.bin('rq-mgr', ['start'], env);
  if (r.code !== 0) throw new Error(`rq-mgr start failed: ${r.stdout}${r.stderr}`);
  const web = webClient(port);
  await untilServing(web);
  return web;
}

/**
 * The web process on its own on a free port, with no rq-mgr and no IPC channel (as if
 * rq-mgr had gone and left it); `stop` ends it.
 */
export async function startLoneWeb(t: TestRoot): Promise<{ web: Web; pid: number; stop: () => Promise<void> }> {
  const port = await t.usePort();
  const child = spawn(process.execPath, [path.join(REPO, 'dist/src/web/web-main.js')], { cwd: t.root, env: { ...process.env, RQ_ROOT: t.root }, stdio: 'ignore' });
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await gone;
  };
  const web = webClient(port);
  try {
    await untilServing(web);
  } catch (e) {
    await stop();
    throw e;
  }
  return { web, pid: child.pid!, stop };
}

export interface SharedInstallOptions {
  /** Before the web starts: queues, flag files, other files of the root. */
  setup?: (t: TestRoot) => void;
  /** Extra keys of config/config.json. */
  config?: Record<string, unknown>;
  /** Added to rq-mgr's environment (the web inherits it). */
  env?: Record<string, string>;
  /** The web process on its own, without rq-mgr (startLoneWeb). */
  lone?: boolean;
  /** Once the web answers: messages and files the tests share. */
  ready?: (t: TestRoot, web: Web) => Promise<void>;
}

/**
 * One install for the tests of the calling describe (or file): rq-mgr and the web
 * started once before them, stopped after them (sharedRoot: the root kept, its path
 * printed, when one failed or the start did).
 */
export function sharedInstall(opts: SharedInstallOptions = {}): { t: () => TestRoot; web: () => Web } {
  let stopLone: (() => Promise<void>) | undefined;
  const shared = sharedRoot(
    async (root) => {
      opts.setup?.(root);
      let web: Web;
      if (opts.lone) {
        root.setMainConfig(opts.config ?? {});
        const lone = await startLoneWeb(root);
        stopLone = lone.stop;
        web = lone.web;
      } else {
        web = await startWeb(root, opts.config, opts.env);
      }
      await opts.ready?.(root, web);
      return web;
    },
    async () => stopLone?.(),
  );
  return { t: shared.t, web: shared.started };
}

/** Send bytes as they are on a new connection to `port`; resolves with everything the server sent. */
export function rawRequest(port: number, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    sock.on('data', (c: Buffer) => chunks.push(c));
    sock.on('error', reject);
    sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    sock.write(bytes);
  });
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
    raw: (bytes) => rawRequest(port, bytes),
  };
}
