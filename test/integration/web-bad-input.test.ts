/**
 * Bad input on the web and the Cloudq door gets a 4xx with a one-line reason, never a
 * 5xx (issue 18), against a real rq-mgr, web process and queue processes.
 *
 * The walk: every route of the web's routers (read from the app itself, so a new route
 * is walked too), with each bad value in each of its path parameters (malformed
 * percent-escapes, names over 255 bytes, unknown names and ids, NUL, dot-files), each
 * bad query, and for POST routes each bad body (deep JSON, wrong types, missing fields,
 * broken multipart); a route that reads nothing but its path gets only the bad paths.
 * Each request goes three times: as curl sends it (an error is RQ's plain `<status> -
 * <text>`, or the Not Found page), with `x_format=json` (an error is `["fail", reason]`),
 * and as a browser sends it (an error is a page). No reply may be a 5xx, every error
 * must carry a one-line reason, and the walk must leave no error line in the log.
 *
 * Then the cases the issue saw, one by one, and the same limits on the queue socket.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/logger.js';
import { readMainConfig } from '../../src/store/config-files.js';
import { rootLayout } from '../../src/store/layout.js';
import { createApp } from '../../src/web/app.js';
import { sharedRoot, shortId, type TestRoot } from '../helpers/install.js';
import { startProtocols, type Protocols } from '../helpers/protocols.js';
import type { Web } from '../helpers/web.js';

/** `n` arrays, one inside the other. */
const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n);
const LONG = 'a'.repeat(300);
/** 300 bytes in 100 characters. */
const LONG_UTF8 = '%E4%B8%AD'.repeat(100);
const UNKNOWN_ID = '20200101.0000.00.000.1';

let waiting = '';
let running = '';
let failed = '';
let finished = '';

const shared = sharedRoot(async (t: TestRoot): Promise<Protocols> => {
  t.addQueue({ name: 'walk', num_workers: 0 });
  t.addQueue({ name: 'busy', script: 'hang.sh' });
  t.addQueue({ name: 'fail', script: 'err.sh' });
  t.addQueue({ name: 'test', script: 'done.sh' });
  const doors = await startProtocols(t, { cloudq: {} });
  // A prep message with an attachment, where every message route has something to find.
  waiting = shortId(((await t.rpc('walk', 'prep_message', { dest: 'walk' })) as [string, string])[1]);
  const file = path.join(t.root, 'a.txt');
  fs.writeFileSync(file, 'attached\n');
  expect(await t.rpc('walk', 'attach_message', { msg_id: waiting, pathname: file, name: 'a.txt' })).toEqual(['ok', expect.any(String)]);
  running = await t.send('busy', {});
  failed = await t.send('fail', {});
  finished = await t.send('test', {});
  await t.waitState('busy', running, 'run');
  await t.waitState('fail', failed, 'err');
  await t.waitState('test', finished, 'done');
  return doors;
});
const t = (): TestRoot => shared.t();
const web = (): Web => shared.started().web;

/** Every route of the web app: method and path pattern, from its routers' stacks. */
function appRoutes(): Array<{ method: string; path: string }> {
  const root = rootLayout(t().root);
  const app = createApp({ root, config: readMainConfig(root), log: createLogger({ test: 'routes' }) });
  interface Layer {
    route?: { path: string; methods: Record<string, boolean> };
    handle?: { stack?: Layer[] };
  }
  const out: Array<{ method: string; path: string }> = [];
  const walk = (stack: Layer[]): void => {
    for (const layer of stack) {
      if (layer.route) for (const method of Object.keys(layer.route.methods)) out.push({ method: method.toUpperCase(), path: layer.route.path });
      else if (layer.handle?.stack) walk(layer.handle.stack);
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack);
  return out;
}

/** The good value of each path parameter (the walk changes one at a time). */
function goodParams(): Record<string, string> {
  return { name: 'walk', msg_id: waiting, log_name: 'stdio.log', attach_name: 'a.txt', attachment_name: 'a.txt', file: 'uPlot.min.css', job: '0123456789abcdef' };
}

/**
 * Routes that read nothing but their path: with a good path, any query or body does what
 * the route does (a restart of the queue), so only their path parameters are walked.
 */
const PATH_ONLY = new Set(['POST /q/:name/restart']);

/** Bad values for a path parameter, as they go in the URL. */
const BAD_PATH_VALUES = ['%zz', '%', '%c0%ae%c0%ae', '%E4%B8', LONG, LONG_UTF8, 'nosuch', UNKNOWN_ID, '%00', 'a%0Ab', '.hidden', '%2e%2e'];

/** Bad queries, for every route. */
const BAD_QUERIES = [
  'page=abc',
  'page[]=1',
  'limit=-1',
  'limit[a]=1',
  'state=nope',
  'state[]=que',
  'range=year',
  'range[]=hour',
  'query=x',
  'query[a][]=b',
  'name[]=walk',
  `name=${LONG}`,
  'from=zz',
  'from[]=1',
  'q[]=x',
  'exact[]=1',
  'back[]=x',
  '_method[]=delete',
  'x_format[]=json',
  'a[b][c][d][e][f][g][h][i][j][k]=1',
];

interface Body {
  label: string;
  type: string;
  body: string | FormData;
}

const form = (body: string): Body => ({ label: `form ${body.slice(0, 60)}`, type: 'application/x-www-form-urlencoded', body });
const json = (body: string): Body => ({ label: `json ${body.slice(0, 60)}`, type: 'application/json', body });

function multipartWith(name: string, filename: string | undefined): Body {
  const data = new FormData();
  if (filename === undefined) data.append(name, 'not a file');
  else data.append(name, new Blob(['x']), filename);
  return { label: `multipart ${name} ${(filename ?? '').slice(0, 20)}`, type: '', body: data };
}

/** Bad bodies, for every POST route (none of them names an action that would succeed). */
const BAD_BODIES: Body[] = [
  form(''),
  form('_method[]=delete'),
  form('_method=nope'),
  form('x_format[]=json'),
  form('mesg[]=x'),
  form('mesg=not json'),
  form(`mesg=${encodeURIComponent(`{"dest":"walk","param1":${deep(5000)}}`)}`),
  form('x_format=html&mesg=text'),
  form('queue=x'),
  form('queue[name][]=x'),
  form(`queue[name]=${LONG}&queue[script]=x&queue[num_workers]=1`),
  form('queue[json_path][]=x'),
  form(`queue[json_path]=${LONG}`),
  form('queue[json_path]=config/config.json/x'),
  form('queue_name[]=x'),
  form(`queue_name=${LONG}`),
  form('back[]=x'),
  json(`{"dest":"walk","param1":${deep(5000)}}`),
  json(deep(5000)),
  json('[]'),
  json('"text"'),
  json('null'),
  json('{'),
  json('{"dest":"walk","parm1":"typo"}'),
  json('{"dest":5}'),
  json('{"dest":"walk","_method":["prep"]}'),
  json('{"dest":"walk","post_run_webhook":{"a":1},"due":[1],"max_count":{}}'),
  { label: 'multipart without its end', type: 'multipart/form-data; boundary=zzz', body: '--zzz\r\nContent-Disposition: form-data; name="a"\r\n\r\nb' },
  { label: 'multipart without a boundary', type: 'multipart/form-data', body: 'x' },
  multipartWith('filedata', LONG),
  multipartWith('filedata', '../x'),
  multipartWith('filedata', undefined),
];

/**
 * How the walk asks: as curl does, with `x_format=json`, or as a browser does (its
 * Accept prefers HTML). An error must then be, in turn: anything with a reason;
 * `["fail", reason]`; a page with a reason, or JSON on a `.json` route.
 */
type Style = 'plain' | 'json' | 'browser';
const BROWSER = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

/** What an error reply is, and its reason (undefined when it has none). */
function replyOf(body: string, contentType: string): { kind: 'json' | 'page' | 'plain'; reason: string | undefined } {
  if (contentType.startsWith('application/json')) {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return { kind: 'json', reason: undefined };
    }
    return { kind: 'json', reason: Array.isArray(value) && value[0] === 'fail' && typeof value[1] === 'string' ? value[1] : undefined };
  }
  if (contentType.startsWith('text/html') && body.startsWith('<!DOCTYPE html>\n')) return { kind: 'page', reason: /<p class="reason">(.*)<\/p>/.exec(body)?.[1] };
  return { kind: 'plain', reason: body.replace(/\n$/, '') };
}

/** One request of the walk; the problem with its reply, or undefined when it is right. */
async function probe(method: string, url: string, body: Body | undefined, style: Style): Promise<string | undefined> {
  const target = style === 'json' ? `${url}${url.includes('?') ? '&' : '?'}x_format=json` : url;
  const headers: Record<string, string> = style === 'browser' ? { ...BROWSER } : {};
  const init: RequestInit = { method, headers };
  if (body) {
    init.body = body.body;
    if (body.type !== '') headers['content-type'] = body.type;
  }
  const res = await web().request(target, init);
  if (res.status < 400) {
    await res.body?.cancel();
    return res.status >= 500 ? `status ${res.status}` : undefined;
  }
  const text = await res.text();
  if (res.status >= 500) return `status ${res.status}: ${text.slice(0, 300)}`;
  const { kind, reason } = replyOf(text, res.headers.get('content-type') ?? '');
  if (style === 'json' && kind !== 'json') return `status ${res.status}, not JSON: ${text.slice(0, 200)}`;
  if (style === 'browser' && kind === 'plain') return `status ${res.status}, not a page: ${text.slice(0, 200)}`;
  if (reason === undefined) return `status ${res.status}, no reason in: ${text.slice(0, 200)}`;
  if (reason.trim() === '' || /[\r\n]/.test(reason)) return `status ${res.status}, reason not one line: ${JSON.stringify(reason.slice(0, 300))}`;
  return undefined;
}

/** The size of the install's log now: what is written after it is what a test did. */
function logOffset(): number {
  return fs.statSync(path.join(t().root, 'log/rq.log')).size;
}

/** The error lines (level 50 and up) written to the log since `from`. */
function errorLinesSince(from: number): string[] {
  const text = fs.readFileSync(path.join(t().root, 'log/rq.log')).subarray(from).toString('utf8');
  return text.split('\n').filter((line) => /"level":(5\d|60)/.test(line));
}

describe('the walk: every route with every bad input', () => {
  it('knows every path parameter of every route', () => {
    const routes = appRoutes();
    expect(routes.length).toBeGreaterThan(25);
    for (const r of PATH_ONLY) expect(routes.map((x) => `${x.method} ${x.path}`)).toContain(r);
    for (const { path: p } of routes) {
      for (const param of p.match(/:\w+/g) ?? []) expect(Object.keys(goodParams()), p).toContain(param.slice(1));
    }
  });

  it('answers no bad input with a 5xx, and every error with a one-line reason', { timeout: 600_000 }, async () => {
    const from = logOffset();
    const problems: string[] = [];
    const check = async (method: string, url: string, body?: Body): Promise<void> => {
      // An input that sets x_format itself is not asked for JSON on top.
      const styles: Style[] = url.includes('x_format') || body?.label.includes('x_format') ? ['plain', 'browser'] : ['plain', 'json', 'browser'];
      for (const style of styles) {
        const problem = await probe(method, url, body, style);
        if (problem) problems.push(`${method} ${url.slice(0, 120)}${body ? ` [${body.label}]` : ''} (${style}): ${problem}`);
      }
    };
    for (const route of appRoutes()) {
      const good = goodParams();
      const fill = (bad?: { param: string; value: string }): string =>
        route.path.replace(/:(\w+)/g, (_m, name: string) => (bad?.param === name ? bad.value : encodeURIComponent(good[name]!)));
      for (const param of (route.path.match(/:\w+/g) ?? []).map((p) => p.slice(1))) {
        for (const value of BAD_PATH_VALUES) await check(route.method, fill({ param, value }), route.method === 'POST' ? form('') : undefined);
      }
      if (PATH_ONLY.has(`${route.method} ${route.path}`)) continue;
      for (const query of BAD_QUERIES) await check(route.method, `${fill()}?${query}`, route.method === 'POST' ? form('') : undefined);
      if (route.method === 'POST') for (const body of BAD_BODIES) await check(route.method, fill(), body);
    }
    expect(problems).toEqual([]);
    expect(errorLinesSince(from)).toEqual([]);
  });
});

describe('the cases the issue saw', () => {
  /** GET with `headers`: status, content type and body. */
  async function get(p: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string; body: string }> {
    const res = await web().get(p, headers);
    return { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
  }

  it('a malformed percent-escape in a path parameter is a 400 saying so, logged as no error', async () => {
    const from = logOffset();
    for (const bad of ['%c0%ae%c0%ae', '%zz', '%']) {
      for (const p of [`/q/${bad}`, `/q/walk/${bad}`, `/q/walk/${waiting}/log/${bad}`, `/q/walk/${waiting}/attach/${bad}`]) {
        expect(await get(p), p).toEqual({ status: 400, type: 'text/html; charset=utf-8', body: `400 - The path is not percent-encoded UTF-8 (Failed to decode param '${bad}')` });
      }
      const asJson = await get(`/q/${bad}?x_format=json`);
      expect(asJson.status).toBe(400);
      expect(JSON.parse(asJson.body)).toEqual(['fail', `The path is not percent-encoded UTF-8 (Failed to decode param '${bad}')`]);
    }
    const page = await get('/q/%zz', BROWSER);
    expect(page.status).toBe(400);
    expect(page.body).toContain('<h2>400 Bad Request</h2>\n<p class="reason">The path is not percent-encoded UTF-8 (Failed to decode param &#39;%zz&#39;)</p>');
    expect(page.body).toContain('<link rel="stylesheet" href="/css/rq.css">');
    expect(errorLinesSince(from)).toEqual([]);
  });

  it('a log or attachment name over 255 bytes is a 404 before it reaches the filesystem', async () => {
    const from = logOffset();
    for (const name of [LONG, LONG_UTF8]) {
      for (const p of [
        `/q/test/${finished}/log/${name}`,
        `/q/test/${finished}/attach/${name}`,
        `/q/test/${finished}/tailviewlog/${name}`,
        `/q/test/${finished}/tailview/${name}`,
        `/q/test/${finished}/events/${name}`,
        `/q/test/${finished}/events/attach/${name}`,
      ]) {
        const res = await get(p);
        expect(res.status, p).toBe(404);
        expect(res.body, p).toMatch(/<p class="reason">Nothing here: Message ID (log|attachment) not found: its name is over 255 bytes\.<\/p>/);
      }
    }
    // So is a message id over 255 bytes, even of fewer characters.
    expect((await get(`/q/test/${LONG_UTF8}.json`)).status).toBe(404);
    // An upload's name must leave room for its `.tmp` while it is linked in.
    const upload = multipartWith('filedata', LONG).body as FormData;
    upload.append('x_format', 'json');
    const res = await web().postMultipart(`/q/walk/${waiting}/attach/new`, upload);
    expect(await res.json()).toEqual(['fail', 'Attachment name is 300 bytes long; at most 251 are allowed']);
    expect(errorLinesSince(from)).toEqual([]);
  });

  it('clone and run now of an unknown message are a 404 with RQ’s text', async () => {
    for (const [p, text] of [
      [`/q/walk/${UNKNOWN_ID}/clone`, `Couldn't clone message. ["fail", "msg not found"].`],
      [`/q/walk/${UNKNOWN_ID}/run_now`, `Couldn't run message. ["fail", "msg not in runnable state"].`],
    ] as const) {
      const res = await web().postForm(p, {});
      expect(res.status, p).toBe(404);
      expect(await res.text()).toContain(`<p class="reason">Nothing here: ${text.replace(/"/g, '&#34;').replace(/'/g, '&#39;').replace(/\.$/, '')}.</p>`);
      const asJson = await web().postForm(p, { x_format: 'json' });
      expect(asJson.status).toBe(404);
      expect(await asJson.json()).toEqual(['fail', text]);
    }
  });

  it('run now of an err message and clone of a running one are a 409: RQ’s text for curl, a styled page for a browser', async () => {
    for (const [p, fields, text] of [
      [`/q/fail/${failed}/run_now`, {}, `Couldn't run message. ["fail", "msg not in runnable state"].`],
      [`/q/fail/${failed}`, { _method: 'run_now' }, `Couldn't run message. ["fail", "msg not in runnable state"].`],
      [`/q/busy/${running}/clone`, {}, `Couldn't clone message. ["fail", "cannot clone message in run state"].`],
    ] as const) {
      const plain = await web().postForm(p, fields);
      expect(plain.status, p).toBe(409);
      expect(await plain.text()).toBe(`409 - ${text}`);
      const page = await web().request(p, { method: 'POST', body: new URLSearchParams(fields), headers: BROWSER });
      expect(page.status).toBe(409);
      const html = await page.text();
      expect(html).toContain('<link rel="stylesheet" href="/css/rq.css">');
      expect(html).toContain(`<h2>409 Conflict</h2>\n<p class="reason">${text.replace(/"/g, '&#34;').replace(/'/g, '&#39;')}</p>`);
    }
    expect(await t().state('busy', running)).toBe('run');
  });

  it('a 5000-deep array in param1 is a 400 (JSON body and mesg), and 100 levels are the limit', async () => {
    const deepMessage = `{"dest":"walk","param1":${deep(5000)}}`;
    const before = await t().rpc('walk', 'num_messages');
    const bodies = [
      await web().request('/q/walk/new_message', { method: 'POST', headers: { 'content-type': 'application/json' }, body: deepMessage }),
      await web().postForm('/q/walk/new_message', { mesg: deepMessage }),
      await web().request('/q/walk/new_message', { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"dest":"walk","param1":${deep(100)}}` }),
    ];
    for (const res of bodies) {
      expect(res.status).toBe(400);
      expect(await res.text()).toBe('400 - The message nests arrays and objects deeper than 100 levels');
    }
    expect(await t().rpc('walk', 'num_messages')).toEqual(before);
    // The message object and 99 arrays in it: 100 levels, taken.
    const ok = await web().postJson('/q/walk/new_message', { dest: 'walk', _method: 'prep', param1: JSON.parse(deep(99)) as unknown });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as unknown[])[0]).toBe('ok');
  });

  it('adminoper with no action, several or an unknown oper is a 400 naming the fields', async () => {
    for (const [fields, got] of [
      [{ back: '/' }, 'none'],
      [{ pause: '1', resume: '1', down: '1', up: '1' }, 'pause, resume, down, up'],
      [{ up: 'x', resume: 'x' }, 'resume, up'],
      [{ oper: 'nap' }, 'oper=nap'],
      [{ oper: 'pause', up: '1' }, 'up, oper=pause'],
    ] as const) {
      const res = await web().postForm('/q/walk/adminoper', fields);
      expect(res.status).toBe(400);
      expect(await res.text()).toBe(`400 - Couldn't  queue. Send oper=pause|resume|down|up, or one of pause=1, resume=1, down=1, up=1; got ${got}.`);
    }
    expect(await t().rpc('walk', 'status', '')).toEqual(['UP']);
  });

  it('Cloudq: a 5000-deep args is a 400 with a reason, and nothing is stored', async () => {
    const base = shared.started().base('cloudq');
    for (const body of [`{"job":{"klass":"Deep","args":${deep(5000)}}}`, `{"klass":"Deep","args":[${deep(100)}]}`]) {
      const res = await fetch(`${base}/deep`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ status: 'error', message: 'job nests arrays and objects deeper than 100 levels' });
    }
    const ok = await fetch(`${base}/deep`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: `{"klass":"Deep","args":${deep(98)}}` });
    expect(ok.status).toBe(200);
    const first = (await (await fetch(`${base}/deep`)).json()) as { job: { args: unknown } };
    expect(JSON.stringify(first.job.args)).toBe(deep(98));
  });
});

describe('the queue socket', () => {
  it('refuses an argument nested deeper than 100 levels with a fail naming it, and logs no error', async () => {
    const from = logOffset();
    for (const command of ['create_message', 'search', 'get_message', 'run_message']) {
      const reply = await t().rpcRaw('walk', command, `{"dest":"walk","msg_id":"x","param1":${deep(5000)}}`);
      expect((reply as unknown[]).slice(0, 2), command).toEqual(['fail', 'argument nests arrays and objects deeper than 100 levels']);
    }
    expect(await t().rpcRaw('walk', 'create_message', deep(5000))).toEqual(['fail', 'argument nests arrays and objects deeper than 100 levels', 'RQ_BAD_REQUEST']);
    expect(errorLinesSince(from)).toEqual([]);
  });

  it('run_message and clone_message give the stable code of a refusal as a third element', async () => {
    expect(await t().rpc('walk', 'run_message', { msg_id: UNKNOWN_ID })).toEqual(['fail', 'msg not in runnable state', 'RQ_NOT_FOUND']);
    expect(await t().rpc('walk', 'run_message', { msg_id: waiting })).toEqual(['fail', 'msg not in runnable state', 'RQ_NOT_IN_STATE']);
    expect(await t().rpc('walk', 'clone_message', { msg_id: UNKNOWN_ID })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    expect(await t().rpc('walk', 'clone_message', { msg_id: waiting })).toEqual(['fail', 'cannot clone message in prep state', 'RQ_NOT_IN_STATE']);
  });
});
