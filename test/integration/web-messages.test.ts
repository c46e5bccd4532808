/**
 * The message routes of the web (docs/http-api.md) against a real rq-mgr and web
 * process over real sockets: the new-message form and its overrides, every input style of
 * `POST …/new_message` and its error replies, the message and prep pages, the `.json`
 * view and `state.json`, clone, run now, delete, destroy and commit, attachment upload,
 * download and deletion with their temp files, HTML escaping, and ids that try to leave
 * the queue.
 *
 * One install serves every test; each test makes its own messages, so the order does not
 * matter. The queues: `test` runs done.sh, `idle` runs nothing (num_workers 0, messages
 * stay where they are put; `single` and `odd` too, for single_que and odd values), `loop` runs a script that ticks until it is destroyed,
 * `fail` runs err.sh, `downq` is set DOWN by the tests that need it, `formq` gets a
 * form.json, and `rq_router` serves router mode.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shortId, waitFor } from '../helpers/install.js';
import { rackTemps, sharedInstall } from '../helpers/web.js';
import { fdCount, webPid } from '../helpers/web-process.js';

const { t, web } = sharedInstall({
  setup: (root) => {
    root.addQueue({ name: 'test', script: 'done.sh' });
    root.addQueue({ name: 'idle', script: 'done.sh', num_workers: 0 });
    root.addQueue({ name: 'fail', script: 'err.sh' });
    root.addQueue({ name: 'downq', script: 'done.sh', num_workers: 0 });
    root.addQueue({ name: 'formq', script: 'done.sh', num_workers: 0 });
    root.addQueue({ name: 'single', script: 'done.sh', num_workers: 0 });
    root.addQueue({ name: 'odd', script: 'done.sh', num_workers: 0 });
    root.addQueue({ name: 'rq_router', script: 'done.sh', num_workers: 0 });
    fs.writeFileSync(
      path.join(root.root, 'loop.sh'),
      '#!/bin/bash\n# Ticks until destroyed (60 s at most).\necho "run looping" >&3\nfor i in $(seq 1 600); do echo "tick $i"; sleep 0.1; done\necho "done looped" >&3\n',
      { mode: 0o755 },
    );
    root.addQueue({ name: 'loop', script: './loop.sh' });
  },
});

/** POST a JSON message to a queue's new_message; the reply array. */
async function post(queue: string, msg: unknown): Promise<unknown> {
  const res = await web().postJson(`/q/${queue}/new_message`, msg);
  expect(res.status).toBe(200);
  return res.json();
}

/** Create a message through HTTP; its short id. */
async function create(queue: string, msg: Record<string, unknown> = {}): Promise<string> {
  const reply = (await post(queue, { dest: queue, ...msg })) as [string, string];
  expect(reply[0]).toBe('ok');
  return shortId(reply[1]);
}

async function text(res: Response | Promise<Response>): Promise<string> {
  return (await res).text();
}

/** The body of a raw HTTP reply. */
function bodyOf(raw: string): string {
  return raw.slice(raw.indexOf('\r\n\r\n') + 4);
}

function uploadForm(bytes: Buffer | string, filename: string, fields: Record<string, string> = {}): FormData {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append('filedata', new Blob([bytes]), filename);
  return form;
}

/** The temp files of an upload are gone by the time its reply is in (RQ's tests list $TMPDIR right after it). */
function noTempFiles(): void {
  expect(rackTemps(t())).toEqual([]);
}

function md5(bytes: Buffer): string {
  return crypto.createHash('md5').update(bytes).digest('hex');
}

describe('GET /q/:name/new_message', () => {
  /** The field divs of the form, in order: id, style attribute, first label, first note. */
  function fields(html: string): { id: string; style: string | undefined; label: string | undefined; note: string | undefined }[] {
    const form = /<form id="new_queue_form" method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(html.replace(' class="card msg-form"', ''));
    expect(form).not.toBeNull();
    return form![2]!
      .split('<div class="field" ')
      .slice(1)
      .map((chunk) => {
        const head = /^id="([^"]+)"(?: style="([^"]*)")?>/.exec(chunk);
        expect(head, chunk).not.toBeNull();
        return {
          id: head![1]!,
          style: head![2],
          label: /<label[^>]*>([\s\S]*?)<\/label>/.exec(chunk)?.[1]?.trim(),
          note: /<p class="note">([\s\S]*?)<\/p>/.exec(chunk)?.[1],
        };
      });
  }

  it('draws RQ form: action, hidden x_format, the fields in order, none hidden without form.json', async () => {
    const res = await web().get('/q/test/new_message');
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('<title>RQ :: test</title>');
    expect(html).toMatch(/<form id="new_queue_form"[^>]* method="post" action="\/q\/test\/new_message">/);
    expect(html).toContain('<input type="hidden" name="x_format" value="html">');
    const f = fields(html);
    expect(f.map((x) => x.id)).toEqual([
      'mesg_dest_field',
      'mesg_src_field',
      'mesg_param1_field',
      'mesg_param2_field',
      'mesg_param3_field',
      'mesg_param4_field',
      'mesg_status_field',
      'mesg_post_run_webhook_field',
      'mesg_submit_field',
    ]);
    expect(f.every((x) => x.style === undefined)).toBe(true);
    expect(f.map((x) => x.label)).toEqual(['Destination Queue', 'Source Identifier', 'Param 1', 'Param 2', 'Param 3', 'Param 4', 'Status', 'post_run_hook', '&nbsp;']);
    expect(f[0]!.note).toBeUndefined();
    expect(f[1]!.note).toBe('');
    expect(f[2]!.note).toBe('optional parameter');
    expect(html).toContain('name="mesg[dest]" value="/q/test"');
    for (const p of ['src', 'param1', 'param2', 'param3', 'param4', 'post_run_webhook']) expect(html).toContain(`name="mesg[${p}]"`);
    expect(html).toMatch(/name="mesg\[_method\]" value="commit" checked/);
    expect(html).toContain('name="mesg[_method]" value="prep"');
    expect(html).toContain('name="mesg[_method]" value="single_que"');
    // Inner elements never carry the class `field` (the radio group is `field_together`).
    expect(html.match(/class="field"/g)).toHaveLength(9);
  });

  it('applies form.json: default hidden shows only the fields with an entry, with their label and help', async () => {
    const file = path.join(t().queueDir('formq'), 'form.json');
    fs.writeFileSync(
      file,
      JSON.stringify({ default: 'hidden', mesg_param1: { label: 'Cluster ID', help: 'The cluster to deploy to' }, mesg_param3: { label: 'Branch', help: 'Git branch <main>' } }),
    );
    try {
      const f = fields(await text(web().get('/q/formq/new_message')));
      const visible = f.filter((x) => x.style === undefined);
      expect(visible.map((x) => x.id)).toEqual(['mesg_param1_field', 'mesg_param3_field', 'mesg_submit_field']);
      expect(f.filter((x) => x.style !== undefined).every((x) => x.style === 'display: none;')).toBe(true);
      expect(visible[0]).toMatchObject({ label: 'Cluster ID', note: 'The cluster to deploy to' });
      expect(visible[1]).toMatchObject({ label: 'Branch', note: 'Git branch &lt;main&gt;' });
      expect(f.find((x) => x.id === 'mesg_param2_field')).toMatchObject({ label: 'Param 2', note: 'optional parameter' });
    } finally {
      fs.rmSync(file);
    }
  });

  it('answers 500 "Bad overrides file" for a form.json that is not a JSON object', async () => {
    const file = path.join(t().queueDir('formq'), 'form.json');
    for (const bad of ['{"default": "hidden",', '[1,2]']) {
      fs.writeFileSync(file, bad);
      const res = await web().get('/q/formq/new_message');
      expect(res.status).toBe(500);
      expect(await res.text()).toBe('500 - Bad overrides file');
    }
    fs.rmSync(file);
  });

  it('is the Not Found page for a missing queue', async () => {
    const res = await web().get('/q/nosuch/new_message');
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('<h2>Not Found</h2>');
  });

  it('warns when the queue is DOWN', async () => {
    const flag = path.join(t().root, 'config/downq.down');
    fs.writeFileSync(flag, '');
    try {
      expect(await text(web().get('/q/downq/new_message'))).toContain('The queue is DOWN: new messages are refused.');
    } finally {
      fs.rmSync(flag);
    }
  });
});

describe('POST /q/:name/new_message', () => {
  it('refuses a message with an unknown key with a 400 that names it, and creates nothing', async () => {
    const before = fs.readdirSync(path.join(t().queueDir('idle'), 'que')).length;
    const res = await web().postJson('/q/idle/new_message', { dest: 'idle', parm1: 'typo' });
    expect(res.status).toBe(400);
    expect(await res.text()).toMatch(/^400 - Unknown message field "parm1"; known: dest, /);
    expect(fs.readdirSync(path.join(t().queueDir('idle'), 'que'))).toHaveLength(before);
  });

  it('takes a JSON body: the reply is the queue reply; counts to_i, webhook split', async () => {
    const res = await web().postJson('/q/idle/new_message', {
      dest: 'http://127.0.0.1:3333/q/test',
      param1: 'json',
      count: '2abc',
      max_count: 3.7,
      post_run_webhook: ' http://a.example/x   http://b.example/y ',
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const reply = (await res.json()) as [string, string];
    expect(reply[0]).toBe('ok');
    expect(reply[1]).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/q\/idle\/\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/);
    const msg = await t().message('idle', shortId(reply[1]));
    expect(msg).toMatchObject({ dest: 'http://127.0.0.1:3333/q/test', param1: 'json', count: 2, max_count: 3, state: 'que' });
    expect(msg['post_run_webhook']).toEqual(['http://a.example/x', 'http://b.example/y']);
    expect(msg).not.toHaveProperty('_method');
  });

  it('takes the form field mesg=<json> (x_format json by default, or any value but html)', async () => {
    for (const fields of [{}, { x_format: 'json' }, { x_format: 'yaml' }]) {
      const res = await web().postForm('/q/idle/new_message', { ...fields, mesg: JSON.stringify({ dest: 'idle', param2: 'form', count: 2, max_count: 3 }) });
      expect(res.status).toBe(200);
      const reply = (await res.json()) as [string, string];
      expect(reply[0]).toBe('ok');
      expect(await t().message('idle', shortId(reply[1]))).toMatchObject({ param2: 'form', count: 2, max_count: 3 });
    }
  });

  it('x_format=html with back: the flash on the next page tells the new id, or the error', async () => {
    const res = await web().postForm('/q/idle/new_message', {
      x_format: 'html',
      back: '/q/idle/new_message',
      'mesg[dest]': '/q/idle',
      'mesg[param1]': 'html',
      'mesg[count]': '2',
      'mesg[max_count]': '3',
      'mesg[_method]': 'commit',
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/q/idle/new_message`);
    const next = await text(web().follow(res));
    const full = /<div id="flash-notice" class="flash">Created message (http:\/\/\S+?)<\/div>/.exec(next)?.[1];
    expect(full).toBeDefined();
    expect(await t().message('idle', shortId(full!))).toMatchObject({ dest: '/q/idle', param1: 'html', count: 2, max_count: 3 });

    const bad = await web().postForm('/q/idle/new_message', { x_format: 'html', back: '/q/idle/new_message', 'mesg[param1]': 'no dest' });
    expect(bad.status).toBe(303);
    expect(await text(web().follow(bad))).toContain(
      '<div id="flash-error" class="flash">Error creating message: input missing required &#34;dest&#34; parameter</div>',
    );
  });

  it('x_format=html without back: the result page', async () => {
    const html = await text(web().postForm('/q/idle/new_message', { x_format: 'html', 'mesg[dest]': 'idle', 'mesg[src]': 'result page' }));
    expect(html).toContain('<h3>New Message Result</h3>');
    expect(html).toContain('Queue: <a href="/q/idle">idle</a>');
    const full = /OK - <a href='(http:\/\/[^']+)'>(http:\/\/[^<]+)<\/a>/.exec(html);
    expect(full?.[1]).toBe(full?.[2]);
    expect(html).toContain(`<a href="/q/idle/${shortId(full![1]!)}">Open the message page</a>`);

    const fail = await text(web().postForm('/q/idle/new_message', { x_format: 'html', 'mesg[src]': 'no dest' }));
    expect(fail).toContain('fail - input missing required &#34;dest&#34; parameter');
  });

  it('dispatches _method: prep leaves the message in prep, single_que answers the waiting message', async () => {
    const prep = (await post('idle', { dest: 'idle', _method: 'prep' })) as [string, string];
    expect(await t().state('idle', shortId(prep[1]))).toBe('prep');
    const first = (await post('single', { dest: 'single', _method: 'single_que' })) as [string, string];
    expect(first[0]).toBe('ok');
    const again = (await post('single', { dest: 'single', _method: 'single_que', param1: 'ignored' })) as [string, string];
    expect(again).toEqual(first);
    expect(await t().rpc('single', 'num_messages')).toMatchObject({ que: 1 });
  });

  it('answers 400 "Invalid method param" for any other _method', async () => {
    for (const m of ['bogus', 'delete', ['commit'], 'constructor']) {
      const res = await web().postJson('/q/idle/new_message', { dest: 'idle', _method: m });
      expect(res.status).toBe(400);
      expect(await res.text()).toBe('400 - Invalid method param');
    }
    const form = await web().postForm('/q/idle/new_message', { x_format: 'html', 'mesg[dest]': 'idle', 'mesg[_method]': 'nope' });
    expect(form.status).toBe(400);
  });

  it('answers 200 with the queue fail reply when dest is missing', async () => {
    expect(await post('idle', { param1: 'x' })).toEqual(['fail', 'input missing required "dest" parameter']);
  });

  it('answers a clear 400 for malformed JSON and a message that is not an object, creating nothing', async () => {
    const before = await t().rpc('idle', 'num_messages');
    const cases: [Promise<Response>, RegExp][] = [
      [web().request('/q/idle/new_message', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"dest": "idle",' }), /^400 - Bad JSON body: /],
      [web().postJson('/q/idle/new_message', ['dest', 'idle']), /^400 - The JSON body must be a message object, got an array$/],
      [web().postForm('/q/idle/new_message', { mesg: '{"dest": idle}' }), /^400 - Bad JSON in 'mesg': /],
      [web().postForm('/q/idle/new_message', { mesg: '"idle"' }), /^400 - Parameter 'mesg' must be a JSON object, got string "idle"$/],
      [web().postForm('/q/idle/new_message', { x_format: 'json' }), /^\["fail","Parameter 'mesg' must be the message as JSON text, got nothing"\]$/],
      [web().postForm('/q/idle/new_message', { x_format: 'html', mesg: '{"dest":"idle"}' }), /^400 - With x_format=html the message is the form fields mesg\[dest\]/],
    ];
    for (const [res, body] of cases) {
      const r = await res;
      expect(r.status).toBe(400);
      expect(await r.text()).toMatch(body);
    }
    expect(await t().rpc('idle', 'num_messages')).toEqual(before);
  });

  it('answers 503 for a DOWN queue, and its message pages are 404', async () => {
    const id = await create('downq');
    const flag = path.join(t().root, 'config/downq.down');
    fs.writeFileSync(flag, '');
    try {
      const res = await web().postJson('/q/downq/new_message', { dest: 'downq' });
      expect(res.status).toBe(503);
      expect(await res.text()).toBe('503 - Service Unavailable - Operationally Down');
      const form = await web().postForm('/q/downq/new_message', { x_format: 'html', back: '/', 'mesg[dest]': 'downq' });
      expect(form.status).toBe(503);
      expect((await web().get(`/q/downq/${id}`)).status).toBe(404);
      expect((await web().get(`/q/downq/${id}.json`)).status).toBe(404);
      expect((await web().get(`/q/downq/${id}/state.json`)).status).toBe(404);
    } finally {
      fs.rmSync(flag);
    }
    expect((await web().get(`/q/downq/${id}`)).status).toBe(200);
  });

  it('is the Not Found page for a missing queue', async () => {
    const res = await web().postJson('/q/nosuch/new_message', { dest: 'nosuch' });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain('<h2>Not Found</h2>');
  });

  it('sends to rq_router in router mode, and message URLs resolve there', async () => {
    const rules = path.join(t().root, 'config/rq_router_rules.json');
    fs.writeFileSync(rules, '[]');
    try {
      const reply = (await post('test', { dest: 'test', param1: 'routed' })) as [string, string];
      expect(reply[1]).toContain('/q/rq_router/');
      const id = shortId(reply[1]);
      expect(await t().state('rq_router', id)).toBe('que');
      expect(await (await web().get(`/q/test/${id}.json`)).json()).toMatchObject({ msg_id: id, param1: 'routed' });
      expect(await (await web().get(`/q/test/${id}/state.json`)).json()).toEqual(['que']);
    } finally {
      fs.rmSync(rules);
    }
  });
});

describe('GET /q/:name/:msg_id', () => {
  it('shows the summary table in RQ markup: count 2, max_count 3 and the default 15', async () => {
    const id = await create('test', { param1: 'summary', count: 2, max_count: 3 });
    expect(await t().waitState('test', id, 'done')).toBe('done - all good');
    const res = await web().get(`/q/test/${id}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toMatch(/\scount[^:]+:[^2]+2\s/);
    expect(html).toMatch(/\smax_count[^:]+:[^3]+3\s/);
    expect(html).toContain('  <tr class="hideme hidden">\n    <td class="key">\n count</td><td class="sep"> : </td><td> 2 </td>\n  </tr>');
    expect(html).toContain('<td class="key">\n status</td><td class="sep"> : </td><td> done - all good </td>');
    expect(html).toContain('<td class="key">\n param1</td><td class="sep"> : </td><td> summary </td>');
    expect(html).toContain(`<td class="key">\n orig_msg_id</td><td class="sep"> : </td><td> <a href="http://127.0.0.1:${web().port}/q/test/${id}">http://127.0.0.1:${web().port}/q/test/${id}</a> </td>`);

    const dflt = await create('idle', { param1: 'default' });
    expect(await text(web().get(`/q/idle/${dflt}`))).toMatch(/\smax_count[^:]+:[^1]+15\s/);
  });

  it('shows the header, status, actions, attachments, log links and the live tail panel', async () => {
    const id = await create('test', { param1: 'page' });
    await t().waitState('test', id, 'done');
    const html = await text(web().get(`/q/test/${id}`));
    expect(html).toContain(`RQ : test : ${id}`);
    expect(html).toContain('<span class="msg-status" id="msg-status">all good</span>');
    expect(html).toMatch(new RegExp(`<form [^>]*action="/q/test/${id}/clone"><button [^>]*>Clone message</button>`));
    // Run Now is for a waiting message only.
    expect(html).not.toContain(`action="/q/test/${id}/run_now"`);
    expect(html).toContain('name="_method" value="delete"');
    expect(html).not.toContain('name="_method" value="destroy"');
    expect(html).toContain('No attachments.');
    expect(html).toContain(`<a href="/q/test/${id}/log/stdio.log">Raw log</a>`);
    expect(html).toContain(`<a href="/q/test/${id}/tailviewlog/stdio.log">Full tail</a>`);
    expect(html).toContain(`<section id="live-tail" data-events="/q/test/${id}/events/stdio.log">`);
    expect(html).toContain('<pre id="tail-output"></pre>');
    expect(html).toContain('<label><input type="checkbox" id="tail-follow" checked> Follow</label>');
    expect(html).toContain('<script src="/js/live-tail.js"></script>');
    expect(html).toContain('<summary>All fields</summary>');
    expect(html).toContain(`&#34;path&#34;: &#34;queue/test/done/`);
    // No inline script: every <script> has a src.
    expect(html.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull();
  });

  it('offers destroy, not delete, while the message runs', async () => {
    const id = await create('loop');
    await t().waitState('loop', id, 'run');
    await waitFor(async () => (await t().statusOf('loop', id)) === 'run - looping');
    const html = await text(web().get(`/q/loop/${id}`));
    expect(html).toContain('name="_method" value="destroy"');
    expect(html).not.toContain('name="_method" value="delete"');
    expect(html).toContain('<span class="msg-status" id="msg-status">looping</span>');
    expect(await (await web().postForm(`/q/loop/${id}`, { _method: 'destroy', x_format: 'json' })).json()).toEqual(['ok', 'msg destroyed']);
    await t().waitState('loop', id, 'err');
  });

  it('answers the read view for <id>.json and the state for state.json', async () => {
    const id = await create('idle', { param3: 'view' });
    const res = await web().get(`/q/idle/${id}.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual(await t().message('idle', id));
    const state = await web().get(`/q/idle/${id}/state.json`);
    expect(state.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await state.json()).toEqual(['que']);
  });

  it('is 404 for an unknown id, in every variant: the Not Found page, or JSON for the .json routes', async () => {
    for (const p of ['/q/idle/20200101.0000.00.000.1', '/q/idle/nonsense', '/q/nosuch/20200101.0000.00.000.1']) {
      const res = await web().get(p);
      expect(res.status, p).toBe(404);
      expect(await res.text(), p).toContain('<h2>Not Found</h2>');
    }
    for (const p of ['/q/idle/20200101.0000.00.000.1.json', '/q/idle/20200101.0000.00.000.1/state.json']) {
      const res = await web().get(p);
      expect(res.status, p).toBe(404);
      expect(await res.json(), p).toEqual(['fail', 'Message ID not found']);
    }
  });

  it('escapes what it shows: a param with a script tag is text', async () => {
    const id = await create('idle', { param1: '<script>alert(1)</script>', src: '"><img src=x onerror=alert(2)>' });
    const html = await text(web().get(`/q/idle/${id}`));
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).not.toContain('<script>alert(1)');
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&#34;&gt;&lt;img src=x onerror=alert(2)&gt;');
  });

  it('shows odd values as they are: a due that is no time, a dest that is not a string', async () => {
    for (const due of ['soon', 1e300]) {
      const id = await create('odd', { due, dest: { host: 'x' } });
      const res = await web().get(`/q/odd/${id}`);
      expect(res.status).toBe(200);
      const html = await res.text();
      expect(html).toContain(`<td class="key">\n due</td><td class="sep"> : </td><td> ${typeof due === 'string' ? due : JSON.stringify(due)} </td>`);
      expect(html).toContain('<td class="key">\n dest</td><td class="sep"> : </td><td> {&#34;host&#34;:&#34;x&#34;} </td>');
    }
  });

  it('never reads outside the queue: traversal in msg_id is 404', async () => {
    // A message-shaped directory outside the state directories, and a file at the root.
    const sneaky = path.join(t().queueDir('idle'), 'sneaky');
    fs.mkdirSync(sneaky, { recursive: true });
    fs.writeFileSync(path.join(sneaky, 'msg'), JSON.stringify({ msg_id: 'sneaky', dest: 'SECRET-SNEAKY' }));
    fs.writeFileSync(path.join(t().root, 'secret.json'), JSON.stringify({ msg_id: 'x', dest: 'SECRET-ROOT' }));
    const paths = [
      '/q/idle/..%2fsneaky',
      '/q/idle/..%2fsneaky.json',
      '/q/idle/%2e%2e/sneaky',
      '/q/idle/que/..%2f..%2fsneaky',
      '/q/idle/%252e%252e%252fsneaky',
      '/q/idle/%252e%252e%252f%252e%252e%252f%252e%252e%252fsecret.json',
      '/q/idle/..%2f..%2f..%2fsecret.json',
      '/q/idle/%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.json',
      '/q/idle/.sneaky',
      '/q/idle/sneaky',
      '/q/idle/sneaky.json',
      '/q/idle/sneaky/state.json',
      '/q/idle/%00sneaky',
    ];
    for (const p of paths) {
      const raw = await web().raw(`GET ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      expect(raw, p).toMatch(/^HTTP\/1\.1 404 /);
      expect(bodyOf(raw), p).not.toContain('SECRET');
    }
    // Actions on such ids find no message: 404, with the queue's reply when it was asked.
    const actions: [string, RegExp][] = [
      ['/q/idle/..%2fsneaky/clone', /^HTTP\/1\.1 404 /],
      ['/q/idle/.sneaky/clone', /^HTTP\/1\.1 404 /],
      ['/q/idle/%252e%252e%252fsneaky/clone', /^HTTP\/1\.1 404 [\s\S]*&#34;msg not found&#34;/],
      ['/q/idle/%252e%252e%252fsneaky/run_now', /^HTTP\/1\.1 404 [\s\S]*&#34;msg not in runnable state&#34;/],
    ];
    for (const [p, reply] of actions) {
      const raw = await web().raw(`POST ${p} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\n\r\n`);
      expect(raw, p).toMatch(reply);
    }
    expect(fs.readdirSync(sneaky)).toEqual(['msg']);
  });
});

describe('clone, run now, delete, destroy, commit', () => {
  it('clones a finished message: flash, 303 to the queue, the copy runs with cloned_from', async () => {
    const id = await create('fail', { param1: 'clone me' });
    await t().waitState('fail', id, 'err');
    const res = await web().postForm(`/q/fail/${id}/clone`, {});
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/q/fail`);
    expect(await text(web().follow(res))).toContain('<div id="flash-notice" class="flash">Message cloned successfully</div>');
    let copy: string | undefined;
    await waitFor(async () => {
      const errs = (await t().rpc('fail', 'messages', { state: 'err' })) as { msg_id: string }[];
      for (const e of errs) if ((await t().message('fail', e.msg_id))['cloned_from'] === id) copy = e.msg_id;
      return copy !== undefined;
    });
    expect(await t().message('fail', copy!)).toMatchObject({ param1: 'clone me', count: 0, cloned_from: id });
    const html = await text(web().get(`/q/fail/${copy!}`));
    expect(html).toContain(`<td class="key">\n cloned_from</td><td class="sep"> : </td><td> <a href="/q/fail/${id}">${id}</a> </td>`);
  });

  it('answers 409 with RQ’s reply dump when clone is refused, 404 for a missing message', async () => {
    const waiting = await create('idle');
    const res = await web().postForm(`/q/idle/${waiting}/clone`, {});
    expect(res.status).toBe(409);
    expect(await res.text()).toBe('409 - Couldn\'t clone message. ["fail", "cannot clone message in que state"].');
    const missing = await web().postForm('/q/idle/20200101.0000.00.000.1/clone', { x_format: 'json' });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual(['fail', 'Couldn\'t clone message. ["fail", "msg not found"].']);
  });

  it('runs a waiting message now (route and _method=run_now): flash, 303 to the message page', async () => {
    const id = await create('idle', { due: Math.floor(Date.now() / 1000) + 3600 });
    expect(await text(web().get(`/q/idle/${id}`))).toMatch(new RegExp(`<form [^>]*action="/q/idle/${id}/run_now"><button [^>]*>Run message \\(risky\\)</button>`));
    for (const [p, fields] of [[`/q/idle/${id}/run_now`, {}], [`/q/idle/${id}`, { _method: 'run_now' }]] as const) {
      const res = await web().postForm(p, fields);
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe(`${web().base}/q/idle/${id}`);
      const page = await web().follow(res);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="flash-notice" class="flash">Message in run successfully</div>');
    }
    expect(Number((await t().message('idle', id))['due'])).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it('answers 409 with RQ’s reply dump when run now is refused', async () => {
    const id = await create('test');
    await t().waitState('test', id, 'done');
    for (const [p, fields] of [[`/q/test/${id}/run_now`, {}], [`/q/test/${id}`, { _method: 'run_now' }]] as const) {
      const res = await web().postForm(p, fields);
      expect(res.status).toBe(409);
      expect(await res.text()).toBe('409 - Couldn\'t run message. ["fail", "msg not in runnable state"].');
    }
  });

  it('deletes: html flash and 303 to the queue; json reply; a failure flashes on the message page', async () => {
    const id = await create('idle');
    const res = await web().postForm(`/q/idle/${id}`, { _method: 'delete' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/q/idle`);
    expect(await text(web().follow(res))).toContain('<div id="flash-notice" class="flash">Message deleted successfully</div>');
    expect(await t().state('idle', id)).toBeUndefined();

    const other = await create('idle');
    expect(await (await web().postForm(`/q/idle/${other}`, { _method: 'delete', x_format: 'json' })).json()).toEqual(['ok', 'msg deleted']);
    expect(await (await web().postForm(`/q/idle/${other}`, { _method: 'delete', x_format: 'json' })).json()).toEqual(['fail', 'msg not found']);

    const again = await web().postForm(`/q/idle/${id}`, { _method: 'delete' });
    expect(again.headers.get('location')).toBe(`${web().base}/q/idle/${id}`);
    const gone = await web().follow(again);
    expect(gone.status).toBe(404);
    expect(await gone.text()).toContain('<div id="flash-error" class="flash">Delete got [&#34;fail&#34;, &#34;msg not found&#34;]</div>');
  });

  it('destroys a running message: flash, 303 to the queue, the run ends in err', async () => {
    const id = await create('loop');
    await t().waitState('loop', id, 'run');
    const res = await web().postForm(`/q/loop/${id}`, { _method: 'destroy' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/q/loop`);
    expect(await text(web().follow(res))).toContain('<div id="flash-notice" class="flash">Message destroyed successfully</div>');
    expect(await t().waitState('loop', id, 'err')).toMatch(/SIGTERM/);

    const failed = await web().postForm(`/q/loop/${id}`, { _method: 'destroy' });
    expect(failed.headers.get('location')).toBe(`${web().base}/q/loop/${id}`);
    expect(await text(web().follow(failed))).toContain('<div id="flash-error" class="flash">destroy got [&#34;fail&#34;, &#34;msg not found&#34;]</div>');
    expect(await (await web().postForm(`/q/loop/${id}`, { _method: 'destroy', x_format: 'json' })).json()).toEqual(['fail', 'msg not found']);
  });

  it('commits a prep message: flash and 303 to its page; json replies; a failure flashes', async () => {
    const prep = shortId(((await post('idle', { dest: 'idle', _method: 'prep' })) as [string, string])[1]);
    const page = await text(web().get(`/q/idle/${prep}`));
    expect(page).toContain('<button type="submit" class="primary">Commit Message</button>');
    expect(page).toContain('<button type="submit" class="danger">Delete Message</button>');
    expect(page).toMatch(new RegExp(`<form class="msg-upload" method="post" action="/q/idle/${prep}/attach/new" enctype="multipart/form-data">`));
    expect(page).toContain('<input type="file" name="filedata" required>');

    const res = await web().postForm(`/q/idle/${prep}`, { _method: 'commit' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/q/idle/${prep}`);
    const after = await text(web().follow(res));
    expect(after).toContain('<div id="flash-notice" class="flash">Message committed successfully</div>');
    expect(after).toContain('<span class="msg-badge" id="msg-state">que</span>');

    const again = await web().postForm(`/q/idle/${prep}`, { _method: 'commit' });
    expect(await text(web().follow(again))).toContain('<div id="flash-error" class="flash">Commit got [&#34;fail&#34;, &#34;cannot find message&#34;]</div>');
    expect(await (await web().postForm(`/q/idle/${prep}`, { _method: 'commit', x_format: 'json' })).json()).toEqual(['fail', 'cannot find message']);

    const other = shortId(((await post('idle', { dest: 'idle', _method: 'prep' })) as [string, string])[1]);
    expect(await (await web().postForm(`/q/idle/${other}`, { _method: 'commit', x_format: 'json' })).json()).toEqual(['ok', 'msg commited']);
  });

  it('answers 400 "Invalid method param" for a missing or unknown _method', async () => {
    const id = await create('idle');
    for (const fields of [{}, { _method: 'bogus' }, { _method: 'clone' }]) {
      const res = await web().postForm(`/q/idle/${id}`, fields);
      expect(res.status).toBe(400);
      expect(await res.text()).toBe('400 - Invalid method param');
    }
    expect(await t().state('idle', id)).toBe('que');
  });
});

describe('attachments', () => {
  async function prepMessage(): Promise<string> {
    return shortId(((await post('idle', { dest: 'idle', _method: 'prep' })) as [string, string])[1]);
  }

  it('uploads a binary file (json reply with its md5), downloads it unchanged, and leaves no temp file', async () => {
    const id = await prepMessage();
    const bytes = crypto.randomBytes(300_000);
    const res = await web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm(bytes, 'blob.bin', { x_format: 'json', pathname: '/etc/passwd', msg_id: 'ignored' }));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(['ok', `${md5(bytes)}-Attached successfully`]);
    noTempFiles();
    const onDisk = path.join(t().queueDir('idle'), 'prep', id, 'attach', 'blob.bin');
    expect(md5(fs.readFileSync(onDisk))).toBe(md5(bytes));

    const view = (await (await web().get(`/q/idle/${id}.json`)).json()) as { _attachments: Record<string, { md5: string; size: number }> };
    expect(view._attachments['blob.bin']).toMatchObject({ md5: md5(bytes), size: bytes.length });
    const download = await web().get(`/q/idle/${id}/attach/blob.bin`);
    expect(download.status).toBe(200);
    expect(md5(Buffer.from(await download.arrayBuffer()))).toBe(md5(bytes));

    const page = await text(web().get(`/q/idle/${id}`));
    expect(page).toContain(`<td><a href="/q/idle/${id}/attach/blob.bin">blob.bin</a></td>`);
    expect(page).toContain(`<td class="mono">${md5(bytes)}</td>`);
    expect(page).toContain(`<form class="inline" method="post" action="/q/idle/${id}/attach/blob.bin"><input type="hidden" name="_method" value="delete">`);
  });

  it('uploads from the html form: flash and 303 to the message page; a refusal is a text reply', async () => {
    const id = await prepMessage();
    const res = await web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm('hello\n', 'hello.txt', { x_format: 'html' }));
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/q/idle/${id}`);
    const page = await text(web().follow(res));
    expect(page).toContain('<div id="flash-notice" class="flash">Attached message successfully</div>');
    expect(page).toContain('hello.txt');
    noTempFiles();

    const queued = await create('idle');
    const refused = await web().postMultipart(`/q/idle/${queued}/attach/new`, uploadForm('x', 'x.txt'));
    expect(refused.status).toBe(200);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await refused.text()).toBe(`Commit idle/${queued} got ["fail", "cannot find message"]`);
    noTempFiles();
  });

  it('is 404 without a filedata file part', async () => {
    const id = await prepMessage();
    const noFile = new FormData();
    noFile.append('x_format', 'json');
    noFile.append('filedata', 'just a field');
    const cases = [
      web().postMultipart(`/q/idle/${id}/attach/new`, noFile),
      web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm('x', '', { x_format: 'json' })),
      web().postForm(`/q/idle/${id}/attach/new`, { x_format: 'json', filedata: 'x' }),
      web().postMultipart(`/q/nosuch/${id}/attach/new`, uploadForm('x', 'a.txt')),
    ];
    for (const res of cases) expect((await res).status).toBe(404);
    noTempFiles();
    expect(fs.existsSync(path.join(t().queueDir('idle'), 'prep', id, 'attach'))).toBe(false);
  });

  it('refuses bad attachment names with the queue text; nothing lands outside attach/', async () => {
    const id = await prepMessage();
    const dir = path.join(t().queueDir('idle'), 'prep', id);
    const reply = async (name: string): Promise<unknown> =>
      (await web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm('evil', name, { x_format: 'json' }))).json();
    expect(await reply('.hidden')).toEqual(['fail', 'Attachment name as a dot-file not allowed: .hidden']);
    expect(await reply('a<b>.txt')).toEqual(['fail', 'Attachment name has invalid character. not allowed: a<b>.txt']);
    // The client's file name is passed whole (not cut to its last segment), so a path is refused.
    expect(await reply('../../escaped')).toEqual(['fail', 'Attachment name as a dot-file not allowed: ../../escaped']);
    expect(await reply('x/../../escaped')).toEqual(['fail', 'Attachment name has invalid character. not allowed: x/../../escaped']);
    expect(await reply('x\\..\\back')).toEqual(['fail', 'Attachment name has invalid character. not allowed: x\\..\\back']);
    expect(fs.readdirSync(path.join(dir, 'attach'))).toEqual([]);
    expect(fs.readdirSync(dir).sort()).toEqual(['attach', 'msg']);
    expect(fs.existsSync(path.join(t().queueDir('idle'), 'prep', 'escaped'))).toBe(false);
    expect(fs.existsSync(path.join(t().queueDir('idle'), 'escaped'))).toBe(false);
    noTempFiles();
  });

  /** The head of a multipart body whose one part is the file `filedata`, and its end. */
  const multipartOf = (boundary: string): { head: string; tail: string } => ({
    head: `--${boundary}\r\nContent-Disposition: form-data; name="filedata"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    tail: `\r\n--${boundary}--\r\n`,
  });

  it('closes and removes the temp files of uploads the client abandons half-way', async () => {
    const id = await prepMessage();
    const pid = webPid(t());
    const before = fdCount(pid);
    const boundary = `rq${crypto.randomBytes(8).toString('hex')}`;
    const { head, tail } = multipartOf(boundary);
    const half = 200_000;
    const length = head.length + 2 * half + tail.length;
    const sockets = await Promise.all(
      Array.from({ length: 20 }, () => new Promise<net.Socket>((resolve, reject) => {
        const sock = net.connect(web().port, '127.0.0.1', () => {
          sock.write(`POST /q/idle/${id}/attach/new HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${length}\r\n\r\n${head}`);
          sock.write(crypto.randomBytes(half), () => resolve(sock));
        });
        sock.on('error', reject);
      })),
    );
    await waitFor(() => rackTemps(t()).length === 20, 10_000, 'the 20 uploads to reach their temp files');
    for (const sock of sockets) sock.destroy();
    await waitFor(() => rackTemps(t()).length === 0 && fdCount(pid) <= before, 10_000, `no temp file left and the web's fds back to ${before}`);
    expect(webPid(t())).toBe(pid);
  });

  it('answers a body cut short with a 400, its temp file already gone', async () => {
    const id = await prepMessage();
    const pid = webPid(t());
    const before = fdCount(pid);
    const boundary = `rq${crypto.randomBytes(8).toString('hex')}`;
    const body = multipartOf(boundary).head + 'x'.repeat(100_000); // no closing boundary
    const reply = await web().raw(
      `POST /q/idle/${id}/attach/new HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(bodyOf(reply)).toBe('400 - Bad multipart body: Unexpected end of form');
    noTempFiles();
    await waitFor(() => fdCount(pid) <= before, 10_000, `the web's fds back to ${before}`);
  });

  it('answers a clear 500 when the upload cannot be stored (no tmp dir), and keeps serving', async () => {
    const id = await prepMessage();
    const pid = webPid(t());
    const tmp = path.join(t().root, 'tmp');
    const away = `${tmp}.away`;
    fs.renameSync(tmp, away);
    let res: Response;
    try {
      // Big enough that busboy still reads when the open fails.
      res = await web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm(crypto.randomBytes(5_000_000), 'lost.bin', { x_format: 'json' }));
    } finally {
      fs.renameSync(away, tmp);
    }
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/^500 - Could not store the upload: ENOENT: no such file or directory, open '.*RackMultipart-[^']*'$/);
    expect(webPid(t())).toBe(pid);
    const ok = await web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm('kept\n', 'kept.txt', { x_format: 'json' }));
    expect(((await ok.json()) as unknown[])[0]).toBe('ok');
    noTempFiles();
    expect(fs.readdirSync(path.join(t().queueDir('idle'), 'prep', id, 'attach'))).toEqual(['kept.txt']);
  });

  it('deletes an attachment: flash and 303; json replies; a refusal is a text reply; other _method is 400', async () => {
    const id = await prepMessage();
    await web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm('one', 'one.txt', { x_format: 'json' }));
    await web().postMultipart(`/q/idle/${id}/attach/new`, uploadForm('two', 'two.txt', { x_format: 'json' }));

    const res = await web().postForm(`/q/idle/${id}/attach/one.txt`, { _method: 'delete' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/q/idle/${id}`);
    expect(await text(web().follow(res))).toContain('<div id="flash-notice" class="flash">Attachment deleted successfully</div>');
    expect(fs.readdirSync(path.join(t().queueDir('idle'), 'prep', id, 'attach'))).toEqual(['two.txt']);

    expect(await (await web().postForm(`/q/idle/${id}/attach/two.txt`, { _method: 'delete', x_format: 'json' })).json()).toEqual([
      'ok',
      'Attachment deleted successfully',
    ]);
    expect(await (await web().postForm(`/q/idle/${id}/attach/two.txt`, { _method: 'delete', x_format: 'json' })).json()).toEqual([
      false,
      'No attachment with that named for msg',
    ]);
    const refused = await web().postForm(`/q/idle/${id}/attach/nope`, { _method: 'delete' });
    expect(refused.status).toBe(200);
    expect(refused.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await refused.text()).toBe(`Delete of attach nope on idle/${id} got [false, "No attachment with that named for msg"]`);
    const body = '_method=delete&x_format=json';
    const raw = await web().raw(
      `POST /q/idle/${id}/attach/..%2fmsg HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    expect(raw).not.toMatch(/"ok"/);
    expect(fs.existsSync(path.join(t().queueDir('idle'), 'prep', id, 'msg'))).toBe(true);

    const bad = await web().postForm(`/q/idle/${id}/attach/two.txt`, { _method: 'put' });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toBe('400 - Invalid method param');
  });
});
