/**
 * The queue-level web routes (docs/http-api.md) against a real rq-mgr and web
 * process over real HTTP: the main page and its fragments, `/q.json` and `/q.txt`, queue
 * creation by form and by link (RQ's test_que_create_naming), deletion, the queue page
 * (status, config, schedule, paginated lists per state), disk usage (dashboard, queue
 * page, `/q.json`, `/metrics`), `.txt` / `.json`, `done.json`,
 * `config.json` and `config`, admin operations and restart with RQ's flash texts, search
 * (RQ's test_web_search and the dashboard's free text), and these routes under a
 * relative_root and basic_auth with allow_new_queue false (the pipeline's own rules are
 * web-pipeline.test.ts's).
 *
 * One install is shared by the tests of a describe; each test uses its own queues, so
 * the tests do not depend on each other's order.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { formatBytes } from '../../src/lib/bytes.js';
import { REPO, TestRoot, waitFor } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';

const ID_RE = /^\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/;

/** Message ids listed on a queue page, in page order. */
function listedIds(html: string, queue: string): string[] {
  return [...html.matchAll(new RegExp(`<td class="msg-id"><a href="/q/${queue}/([^"]+)">`, 'g'))].map((m) => m[1]!);
}

/** The text of the flash (HTML-escaped as the layout shows it). */
function flashOf(html: string): string {
  return [...html.matchAll(/<div id="flash-(?:notice|error)" class="flash">([^<]*)<\/div>/g)].map((m) => m[1]).join('\n');
}

async function sendMany(t: TestRoot, queue: string, n: number, msg: Record<string, unknown> = {}): Promise<string[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => t.send(queue, { param1: `m${i}`, ...msg })));
}

describe('queue routes', () => {
  const { t, web } = sharedInstall({
    setup: (root) => {
      for (const name of ['test', 'rates', 'hung', 'paged', 'donejson', 'admin1', 'admin2', 'test_search', 'downq', 'running', 'diskq']) {
        root.addQueue({ name, script: name === 'running' ? 'hang.sh' : 'done.sh', num_workers: name === 'paged' ? 0 : 1 });
      }
      // Two err.sh queues: the rates test counts every message of `erring`; the queue page test lists `erring_page`.
      root.addQueue({ name: 'erring', script: 'err.sh' });
      root.addQueue({ name: 'erring_page', script: 'err.sh' });
      root.addQueue({ name: 'relay', script: 'noop.sh' });
      root.addQueue({ name: 'sched', script: 'done.sh', schedule: [{ cron: '0 0 1 1 *', param1: 'cronny', param3: 'x"<y>' }] });
      // config.json as a symlink to a file elsewhere in the root, with RQ's string numbers.
      fs.mkdirSync(path.join(root.root, 'configs'));
      fs.writeFileSync(path.join(root.root, 'configs/symq.json'), '{"name":"symq","script":"./scripts/done.sh","num_workers":"2","exec_prefix":""}\n');
      root.addQueue({ name: 'symq' });
      fs.rmSync(path.join(root.queueDir('symq'), 'config.json'));
      fs.symlinkSync(path.join(root.root, 'configs/symq.json'), path.join(root.queueDir('symq'), 'config.json'));
      fs.writeFileSync(path.join(root.root, 'config/downq.down'), '');
      // Ends in err or done as its param1 says.
      fs.writeFileSync(path.join(root.root, 'err-or-done.sh'), '#!/bin/sh\n[ "$RQ_PARAM1" = err ] && echo "err as asked" >&3 || echo "done as asked" >&3\n', { mode: 0o755 });
      root.addQueue({ name: 'order_search', script: './err-or-done.sh', exec_prefix: '' });
    },
  });

  describe('main page', () => {
    it("has RQ's status line, ids and version, the New Queue link, custom queues before builtin ones", async () => {
      const res = await web().get('/');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await res.text();
      expect(html).toMatch(/QUEUEMGR:.*OPERATIONAL/);
      expect(html).toContain('<tt>QUEUEMGR:<span class="green" id="status">OPERATIONAL</span></tt>');
      expect(html).toContain(`<span id="pid">${t().pidIn('config/queuemgr.pid')}</span>`);
      expect(html).toContain('<span id="ping">pong</span>');
      expect(html).toMatch(/<span id="uptime">\d+<\/span>/);
      expect(html).toMatch(/<span id="time">\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<\/span>/);
      const own = (JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
      expect(html).toContain(`<span id="version">v${own}</span> <span class="muted" id="rq-compat">RQ 1.18.3 compatible</span>`);
      expect(html).toContain('<p id="new-queue"><a href="/new_queue">New Queue</a></p>');
      expect(html).toContain('<table id="queue-list"');
      const order = [...html.matchAll(/<tr class="queue-row" id="row-([^"]+)">/g)].map((m) => m[1]);
      expect(order.at(-1)).toBe('relay');
      expect(order.slice(0, -1)).toEqual([...order.slice(0, -1)].sort());
    });

    it('shows the counts padded to 4, the status, ping, pid and uptime of each queue', async () => {
      const html = await (await web().get('/')).text();
      for (const s of ['prep', 'que', 'run', 'err', 'done', 'relayed']) expect(html).toContain(`<pre>${s}:</pre><pre id="${s}-sched">0   </pre>`);
      expect(html).toContain('<span class="green" id="status-sched">UP</span>');
      expect(html).toContain('<span id="ping-sched">pong</span>');
      expect(html).toContain(`<span id="pid-sched">${t().pidIn('queues/sched/queue.pid')}</span>`);
      expect(html).toMatch(/<span id="uptime-sched">\d+<\/span>/);
      expect(html).toContain('<span class="red" id="status-downq">DOWN</span>');
    });

    it('has admin forms: pause and down for an UP queue, pause disabled and up for a DOWN one, restart, with back', async () => {
      const html = await (await web().get('/')).text();
      const row = (q: string): string => html.slice(html.indexOf(`id="row-${q}"`), html.indexOf('</tr>', html.indexOf(`id="row-${q}"`)));
      expect(row('sched')).toContain('<form class="inline admin-form" method="post" action="/q/sched/adminoper">\n<input type="hidden" name="back" value="/">');
      expect(row('sched')).toContain('<button type="submit" name="pause" value="pause">pause</button>');
      expect(row('sched')).toMatch(/<button type="submit" name="down" value="down"/);
      expect(row('sched')).toContain('action="/q/sched/restart">\n<input type="hidden" name="back" value="/">');
      expect(row('sched')).toMatch(/<button type="submit" name="restart" value="restart"/);
      expect(row('downq')).toContain('<button type="submit" name="pause" value="pause" disabled>pause</button>');
      expect(row('downq')).toContain('<button type="submit" name="up" value="up">up</button>');
    });

    it('shows each schedule entry with a Run Now form of exactly RQ’s fields', async () => {
      const html = await (await web().get('/')).text();
      expect(html).toContain('<code>0 0 1 1 *</code>');
      // Next and last run in the server's local time (cron's time); this entry never ran.
      expect(html).toMatch(/<span class="cron-next" title="next run \(server time\)">next \d{4}-01-01 00:00:00 [+-]\d{4}<\/span> <span class="cron-last" title="last run \(server time\)">last never<\/span>/);
      expect(html).toContain('param3=x&#34;&lt;y&gt;');
      const form = /<form class="inline" method="post" action="\/q\/sched\/new_message">([\s\S]*?)<\/form>/.exec(html)?.[1] ?? '';
      const fields = [...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1], m[2]]);
      expect(fields).toEqual([
        ['back', '/'],
        ['x_format', 'html'],
        ['mesg[src]', 'cron-now '],
        ['mesg[dest]', 'sched'],
        ['mesg[param1]', 'cronny'],
        ['mesg[param2]', ''],
        ['mesg[param3]', 'x&#34;&lt;y&gt;'],
        ['mesg[param4]', ''],
        ['schedule_entry', '1'],
      ]);
      expect(form).toContain('<button type="submit">Run Now</button>');
    });

    it('shows done and err per minute from the queues’ stats', async () => {
      const done = await sendMany(t(), 'rates', 3);
      const errs = await sendMany(t(), 'erring', 2);
      for (const id of done) await t().waitState('rates', id, 'done');
      for (const id of errs) await t().waitState('erring', id, 'err');
      const html = await (await web().get('/')).text();
      expect(html).toContain('<span class="rate-done" id="done-rate-rates">3</span> done');
      expect(html).toMatch(/<span class="rate-err red" id="err-rate-erring">2<\/span> err/);
      expect(html).toContain('<pre>err:</pre><pre id="err-erring">2   </pre>');
    });

    it('answers while a queue process hangs, showing that queue DOWN with - cells (q.json: counts {}; .json: 503)', async () => {
      const pid = t().pidIn('queues/hung/queue.pid')!;
      process.kill(pid, 'SIGSTOP');
      try {
        // All at once: each waits for the hung queue's probe to time out.
        const [main, json, txt, page, qjson] = await Promise.all(
          ['/', '/q.json', '/q/hung.txt', '/q/hung', '/q/hung.json'].map(async (p) => {
            const res = await web().get(p);
            return { status: res.status, text: await res.text() };
          }),
        );
        const html = main!.text;
        expect(html).toContain('<span class="red">DOWN not answering</span>');
        expect(html).toContain('<pre>que:</pre><pre id="que-hung">-   </pre>');
        expect(html).toContain('<span id="ping-hung">-</span>');
        expect(html).toContain('<span id="pid-hung">-</span>');
        expect(html).toContain('<span class="green" id="status-sched">UP</span>');
        // Its admin state is unknown: every admin button is offered.
        const row = html.slice(html.indexOf('id="row-hung"'), html.indexOf('</tr>', html.indexOf('id="row-hung"')));
        for (const b of ['pause', 'resume', 'down', 'up']) expect(row).toContain(`name="${b}" value="${b}"`);
        const q = JSON.parse(json!.text) as { queues: Array<Record<string, unknown>> };
        expect(q.queues.find((x) => x['name'] === 'hung')).toEqual({ name: 'hung', status: 'DOWN', ping: null, pid: null, uptime: null, counts: {}, disk: null });
        expect(txt!.text).toBe('status: DOWN\n');
        expect(page!.text).toContain('queue is COMPLETELY DOWN (not answering)');
        expect(page!.text).toContain('Nothing to display.');
        expect(qjson).toEqual({ status: 503, text: '["fail","Queue hung is not answering"]' });
      } finally {
        process.kill(pid, 'SIGCONT');
      }
    });
  });

  describe('/q.json and /q.txt', () => {
    it('/q.json has RQ’s shape and key order, custom queues sorted then builtin ones', async () => {
      const before = Math.floor(Date.now() / 1000);
      const res = await web().get('/q.json');
      const after = Math.floor(Date.now() / 1000);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const text = await res.text();
      const q = JSON.parse(text) as Record<string, unknown> & { queues: Array<Record<string, unknown>> };
      expect(Object.keys(q)).toEqual(['status', 'ping', 'pid', 'uptime', 'version', 'time', 'queues']);
      expect(q).toMatchObject({ status: 'OPERATIONAL', ping: 'pong', pid: t().pidIn('config/queuemgr.pid'), version: '1.18.3' });
      expect(q['time']).toBeGreaterThanOrEqual(before);
      expect(q['time']).toBeLessThanOrEqual(after);
      const names = q.queues.map((x) => x['name'] as string);
      expect(names.at(-1)).toBe('relay');
      expect(names.slice(0, -1)).toEqual([...names.slice(0, -1)].sort());
      const sched = q.queues.find((x) => x['name'] === 'sched')!;
      // RQ's keys in RQ's order, then rq's `disk` (its own test is below).
      expect(Object.keys(sched)).toEqual(['name', 'status', 'ping', 'pid', 'uptime', 'counts', 'disk']);
      expect(sched).toMatchObject({ status: 'UP', ping: 'pong', pid: t().pidIn('queues/sched/queue.pid') });
      expect(Object.keys(sched['counts'] as object)).toEqual(['prep', 'que', 'run', 'err', 'done', 'relayed']);
      expect(q.queues.find((x) => x['name'] === 'downq')).toMatchObject({ status: 'DOWN', ping: 'pong' });
    });

    it('/q.txt lists <root>q/<name>.txt sorted, joined by newlines, no trailing newline', async () => {
      const res = await web().get('/q.txt');
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      const text = await res.text();
      expect(text.endsWith('\n')).toBe(false);
      const lines = text.split('\n');
      expect(lines).toEqual([...lines].sort());
      expect(lines).toContain('/q/relay.txt');
      expect(lines).toContain('/q/test.txt');
      for (const l of lines) expect(l).toMatch(/^\/q\/[^/]+\.txt$/);
    });
  });

  describe('disk usage', () => {
    interface Disk {
      measured_at: number;
      took_ms: number;
      bytes: number;
      states: Record<string, { messages: number; bytes: number }>;
    }

    it('/q.json, the dashboard, the queue page and /metrics show what each state of a queue takes on disk', async () => {
      for (let i = 0; i < 2; i++) await t().waitState('diskq', await t().send('diskq', {}), 'done');
      // Stats alone measure at most once a minute; a clean measures again at once.
      expect(await t().rpc('diskq', 'clean', {})).toMatchObject(['ok', { finished: true }]);
      let disk: Disk | null = null;
      await waitFor(
        async () => {
          const q = (await (await web().get('/q.json')).json()) as { queues: Array<{ name: string; disk: Disk | null }> };
          disk = q.queues.find((x) => x.name === 'diskq')!.disk;
          return disk?.states['done']?.messages === 2;
        },
        5_000,
        'diskq measured with its 2 done messages',
      );
      const d = disk as unknown as Disk;
      expect(Object.keys(d)).toEqual(['measured_at', 'took_ms', 'bytes', 'states']);
      const done = d.states['done']!;
      expect(done.bytes).toBeGreaterThanOrEqual(2 * 4096);

      const main = await (await web().get('/')).text();
      expect(main).toContain('<th>per minute</th><th>disk</th><th>process</th>');
      expect(main).toMatch(new RegExp(`<span id="disk-diskq" title="measured \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC">${formatBytes(d.bytes)}</span>`));
      expect(main).toContain(`<span class="disk-state">done ${formatBytes(done.bytes)}</span>`);

      const page = await (await web().get('/q/diskq')).text();
      expect(page).toContain(`total <span id="disk-total">${formatBytes(d.bytes)}</span>`);
      expect(page).toContain(`<tr><td>done</td><td id="disk-done-messages">2</td><td id="disk-done-bytes">${formatBytes(done.bytes)}</td><td>2 days</td></tr>`);
      expect(page).toMatch(/<tr><td>err<\/td><td id="disk-err-messages">0<\/td><td id="disk-err-bytes">[^<]+<\/td><td>30 days<\/td><\/tr>/);

      const metrics = await (await web().get('/metrics')).text();
      expect(metrics).toContain(`rq_disk_usage_bytes{queue="diskq",state="done"} ${done.bytes}`);
    });
  });

  describe('creating and deleting queues', () => {
    it('GET /new_queue is the form with RQ’s fields', async () => {
      const html = await (await web().get('/new_queue')).text();
      expect(html).toContain('<form class="card form-grid" id="new_queue_form" method="post" action="/new_queue">');
      expect(html).toContain('name="queue[name]"');
      expect(html).toContain('name="queue[script]"');
      expect(html).toContain('name="queue[num_workers]" value="1"');
      expect(html).toContain('name="queue[exec_prefix]" value="bash -lc "');
      for (const n of [1, 2, 3, 4]) {
        expect(html).toContain(`name="queue[coalesce_params][]" value="${n}"`);
        expect(html).toContain(`name="queue[blocking_params][]" value="${n}"`);
      }
      expect(html).toContain('name="queue[json_path]"');
    });

    it('test_que_create_naming: a good name lands on the new queue with “queue created”, bad names on a 404 that says why', async () => {
      const form = (name: string): Record<string, string> => ({ 'queue[name]': name, 'queue[script]': './scripts/done.sh', 'queue[num_workers]': '1', 'queue[exec_prefix]': '' });
      const good = await web().postForm('/new_queue', form('good_que'));
      expect(good.status).toBe(303);
      expect(good.headers.get('location')).toBe(`${web().base}/q/good_que`);
      const page = await web().follow(good);
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toContain('queue created');
      expect(flashOf(html)).toBe('New queue created: good_que');
      expect(fs.readFileSync(path.join(t().queueDir('good_que'), 'config.json'), 'utf8')).toBe(
        '{"name":"good_que","script":"./scripts/done.sh","num_workers":1,"exec_prefix":"","env_vars":{},"coalesce_params":[],"blocking_params":[],"schedule":[]}',
      );

      const locations: Record<string, string> = { 'bad que test': '/q/bad%20que%20test', 'bad.que.test': '/q/bad.que.test', 'bad/que/test': '/q/bad/que/test' };
      for (const [name, location] of Object.entries(locations)) {
        const res = await web().postForm('/new_queue', form(name));
        expect(res.status, name).toBe(303);
        expect(res.headers.get('location'), name).toBe(web().base + location);
        const landed = await web().follow(res);
        expect(landed.status, name).toBe(404);
        const body = await landed.text();
        expect(body, name).toContain('queue name has invalid characters');
        expect(body, name).toContain(`<div id="flash-error" class="flash">Queue ${name} not created: queue name has invalid characters</div>`);
        expect(body, name).not.toContain('queue created');
        expect(body, name).toContain('<h2>Not Found</h2>');
      }

      const again = await web().follow(await web().postForm('/new_queue', form('good_que')));
      expect(flashOf(await again.text())).toBe('Queue good_que not created: already created');
    });

    it('refuses a form without queue[...] with a clear 400', async () => {
      const res = await web().postForm('/new_queue', { name: 'x' });
      expect(res.status).toBe(400);
      expect(await res.text()).toBe('400 - The form must send queue[name], queue[script] and queue[num_workers]');
    });

    it('POST /new_queue_link creates a queue from a file in the root (303, “queue created”), once', async () => {
      fs.writeFileSync(path.join(t().root, 'linked.json'), JSON.stringify({ name: 'linked', script: './scripts/done.sh', num_workers: 1, exec_prefix: '' }));
      const res = await web().postForm('/new_queue_link', { 'queue[json_path]': 'linked.json' });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe(`${web().base}/q/linked`);
      const html = await (await web().follow(res)).text();
      expect(flashOf(html)).toBe('New queue created: linked (from linked.json)');
      expect(fs.realpathSync(path.join(t().queueDir('linked'), 'config.json'))).toBe(fs.realpathSync(path.join(t().root, 'linked.json')));
      const again = await web().follow(await web().postForm('/new_queue_link', { 'queue[json_path]': 'linked.json' }));
      expect(flashOf(await again.text())).toContain('queue is already running');
    });

    it('POST /new_queue_link reads only regular files inside the root; anything else is RQ’s 404', async () => {
      fs.writeFileSync(path.join(t().root, 'broken.json'), '{nope');
      execFileSync('mkfifo', [path.join(t().root, 'fifo.json')]);
      fs.writeFileSync(path.join(t().root, 'huge.json'), `{"name":"huge","pad":"${'x'.repeat(1024 * 1024)}"}`);
      for (const p of ['../outside.json', '/etc/passwd', 'scripts/../../x.json', 'broken.json', 'missing.json', 'fifo.json', 'huge.json']) {
        const res = await web().postForm('/new_queue_link', { 'queue[json_path]': p });
        expect(res.status, p).toBe(404);
        expect(await res.text(), p).toContain(`Couldn&#39;t parse json file (${p}).`);
      }
      expect((await web().postForm('/new_queue_link', { 'queue[other]': 'x' })).status).toBe(400);
    });

    it('POST /delete_queue sends 303 to the root with the flash, and the queue goes away', async () => {
      await web().postForm('/new_queue', { 'queue[name]': 'doomed', 'queue[script]': './scripts/done.sh', 'queue[num_workers]': '1' });
      const ino = fs.statSync(t().queueDir('doomed')).ino;
      const res = await web().postForm('/delete_queue', { queue_name: 'doomed' });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe(`${web().base}/`);
      const html = await (await web().follow(res)).text();
      expect(flashOf(html)).toBe('Queue doomed is being deleted');
      await waitFor(() => fs.existsSync(`${t().queueDir('doomed')}.deleted.${ino}`), 10_000, 'the queue directory to be renamed');
      const q = (await (await web().get('/q.json')).json()) as { queues: Array<{ name: string }> };
      expect(q.queues.map((x) => x.name)).not.toContain('doomed');

      const unknown = await web().follow(await web().postForm('/delete_queue', { queue_name: 'no_such' }));
      expect(flashOf(await unknown.text())).toContain('no such queue');
      const none = await web().postForm('/delete_queue', { other: 'x' });
      expect(none.status).toBe(400);
      expect(await none.text()).toBe('400 - The form must send queue_name');
    });
  });

  describe('/q/<q>.txt, .json and done.json', () => {
    it('.txt is exactly RQ’s text; DOWN is `status: DOWN`; a missing queue is 404', async () => {
      const res = await web().get('/q/sched.txt');
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toMatch(/^status: UP\nuptime: \d+\n\nprep: 0\nque: 0\nrun: 0\n\ndone: 0\nerr: 0\nrelayed: 0\n$/);
      expect(await (await web().get('/q/downq.txt')).text()).toBe('status: DOWN\n');
      expect((await web().get('//q//sched.txt')).status).toBe(200);
      expect((await web().get('/q/nope.txt')).status).toBe(404);
    });

    it('.json has every state’s whole list; DOWN is {"status":"DOWN"}', async () => {
      const ids = await sendMany(t(), 'donejson', 2);
      for (const id of ids) await t().waitState('donejson', id, 'done');
      const res = await web().get('/q/donejson.json');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const j = (await res.json()) as Record<string, unknown> & { messages: Record<string, Array<{ msg_id: string }>> };
      expect(Object.keys(j)).toEqual(['status', 'ping', 'pid', 'uptime', 'time', 'prep_size', 'que_size', 'run_size', 'done_size', 'err_size', 'relayed_size', 'messages']);
      expect(j).toMatchObject({ status: 'UP', ping: 'pong', pid: t().pidIn('queues/donejson/queue.pid'), prep_size: 0, que_size: 0, err_size: 0 });
      expect(Object.keys(j.messages)).toEqual(['prep', 'que', 'run', 'done', 'err', 'relayed']);
      expect(j.messages['done']!.length).toBe(j['done_size']);
      expect(j.messages['done']!.map((m) => m.msg_id)).toEqual(expect.arrayContaining(ids));
      expect(await (await web().get('/q/downq.json')).json()).toEqual({ status: 'DOWN' });
      expect((await web().get('/q/nope.json')).status).toBe(404);
    });

    it('done.json: 10 newest by default, ?limit=n, reverse sorted, RQ’s id pattern', async () => {
      const ids = await sendMany(t(), 'donejson', 12);
      for (const id of ids) await t().waitState('donejson', id, 'done');
      const all = (await (await web().get('/q/donejson.json')).json()) as { messages: { done: Array<{ msg_id: string }> } };
      const newest = all.messages.done.map((m) => m.msg_id);
      const res = await web().get('/q/donejson/done.json');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      const ten = (await res.json()) as string[];
      expect(ten).toHaveLength(10);
      expect(ten).toEqual(newest.slice(0, 10));
      expect(ten).toEqual([...ten].sort().reverse());
      for (const id of ten) expect(id).toMatch(ID_RE);
      expect(await (await web().get('/q/donejson/done.json?limit=2')).json()).toEqual(newest.slice(0, 2));
      const bad = await web().get('/q/donejson/done.json?limit=abc');
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual(['fail', `'limit' must be a whole number, at least 0, got "abc"`]);
      expect((await web().get('/q/nope/done.json')).status).toBe(404);
    });
  });

  describe('config', () => {
    it('config.json is the file as stored, application/json, with Last-Modified, through a symlink too', async () => {
      const file = path.join(t().queueDir('test'), 'config.json');
      const res = await web().get('/q/test/config.json');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.text()).toBe(fs.readFileSync(file, 'utf8'));
      expect(res.headers.get('last-modified')).toBe(fs.statSync(file).mtime.toUTCString());
      const linked = await web().get('/q/symq/config.json');
      expect(await linked.text()).toBe('{"name":"symq","script":"./scripts/done.sh","num_workers":"2","exec_prefix":""}\n');
      expect(linked.headers.get('last-modified')).toBe(fs.statSync(path.join(t().root, 'configs/symq.json')).mtime.toUTCString());
      expect((await web().get('/q/nope/config.json')).status).toBe(404);
    });

    it('config.json needs no queue process', async () => {
      t().addQueue({ name: 'noproc' });
      const res = await web().get('/q/noproc/config.json');
      expect(res.status).toBe(200);
      expect(JSON.parse(await res.text())).toMatchObject({ name: 'noproc' });
    });

    it('config is the queue’s normalised config from its config RPC', async () => {
      const res = await web().get('/q/symq/config');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({
        name: 'symq',
        script: './scripts/done.sh',
        num_workers: 2,
        exec_prefix: '',
        env_vars: {},
        coalesce_params: [],
        blocking_params: [],
        schedule: [],
      });
      expect((await web().get('/q/nope/config')).status).toBe(404);
    });
  });

  describe('admin operations', () => {
    it('pause, resume, down and up with RQ’s flash texts (sic), 303 to back', async () => {
      const status = async (): Promise<string> => (await (await web().get('/q/admin1.txt')).text()).split('\n')[0]!;
      const steps: Array<[string, string, string]> = [
        ['pause', 'Successfully paused queue admin1', 'status: PAUSE'],
        ['resume', 'Successfully resumed queue admin1', 'status: UP'],
        ['down', 'Successfully downd queue admin1', 'status: DOWN'],
        ['up', 'Successfully upd queue admin1', 'status: UP'],
      ];
      for (const [action, flash, after] of steps) {
        const res = await web().postForm('/q/admin1/adminoper', { [action]: action, back: '/q/admin1' });
        expect(res.status, action).toBe(303);
        expect(res.headers.get('location'), action).toBe(`${web().base}/q/admin1`);
        const html = await (await web().follow(res)).text();
        expect(flashOf(html), action).toBe(flash);
        await waitFor(async () => (await status()) === after, 5_000, `admin1 to show ${after}`);
      }
    });

    it('takes exactly one of pause, resume, down, up; none or several is a 400 (RQ: the first, or a 500)', async () => {
      for (const fields of [{ pause: '1', resume: '1', down: '1', up: '1' }, { up: 'x', resume: 'x', back: '/' }, { back: '/' }]) {
        const bad = await web().postForm('/q/admin1/adminoper', fields);
        expect(bad.status).toBe(400);
        expect(await bad.text()).toMatch(/^400 - Couldn't {2}queue\. Send oper=pause\|resume\|down\|up, or one of pause=1, resume=1, down=1, up=1; got [a-z, ]+\.$/);
      }
      expect((await web().postForm('/q/nope/adminoper', { pause: '1' })).status).toBe(404);
      const noBack = await web().postForm('/q/admin1/adminoper', { resume: '1', back: 'http://evil.example/' });
      expect(noBack.headers.get('location')).toBe(`${web().base}/`);
    });

    it('with x_format=json, answers rq-mgr’s reply as JSON instead of a redirect, and a refusal as ["fail", reason]', async () => {
      const json = async (res: Response): Promise<[number, string | null, unknown]> => [res.status, res.headers.get('content-type'), await res.json()];
      const jsonType = 'application/json; charset=utf-8';
      expect(await json(await web().postForm('/q/admin1/adminoper', { oper: 'pause', x_format: 'json' }))).toEqual([200, jsonType, ['ok', 'admin1']]);
      expect((await (await web().get('/q/admin1.txt')).text()).split('\n')[0]).toBe('status: PAUSE');
      expect(await json(await web().postForm('/q/admin1/adminoper', { resume: '1', x_format: 'json', back: '/q/admin1' }))).toEqual([200, jsonType, ['ok', 'admin1']]);
      expect((await (await web().get('/q/admin1.txt')).text()).split('\n')[0]).toBe('status: UP');
      expect(await json(await web().postForm('/q/admin1/adminoper', { oper: 'nap', x_format: 'json' }))).toEqual([
        400,
        jsonType,
        ['fail', "Couldn't  queue. Send oper=pause|resume|down|up, or one of pause=1, resume=1, down=1, up=1; got oper=nap."],
      ]);
      expect(await json(await web().postForm('/q/nope/adminoper', { oper: 'pause', x_format: 'json' }))).toEqual([404, jsonType, ['fail', 'Queue not found']]);
      const before = t().pidIn('queues/admin2/queue.pid');
      expect(await json(await web().postForm('/q/admin2/restart', { x_format: 'json' }))).toEqual([200, jsonType, ['ok', 'admin2']]);
      expect(t().pidIn('queues/admin2/queue.pid')).not.toBe(before);
    });

    it('restart starts a new process: flash, 303 to back', async () => {
      const before = t().pidIn('queues/admin2/queue.pid');
      const res = await web().postForm('/q/admin2/restart', { back: '/q/admin2' });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe(`${web().base}/q/admin2`);
      expect(flashOf(await (await web().follow(res)).text())).toBe('Successfully restarted queue admin2');
      expect(t().pidIn('queues/admin2/queue.pid')).not.toBe(before);
      expect(await t().rpc('admin2', 'ping', '')).toEqual(['pong']);
      expect((await web().postForm('/q/nope/restart', { back: '/' })).status).toBe(404);
    });

    it('a queue directory rq-mgr does not run yet (made by hand, no config.json yet) is a 404 with rq-mgr’s reason, not a 500', async () => {
      // rq-mgr serves a directory made by hand once its config.json is in place, so this one has none.
      fs.mkdirSync(t().queueDir('handmade'));
      const admin = await web().postForm('/q/handmade/adminoper', { pause: '1' });
      expect(admin.status).toBe(404);
      expect(await admin.text()).toContain('invalid queue name');
      const restart = await web().postForm('/q/handmade/restart', { back: '/' });
      expect(restart.status).toBe(404);
      expect(await restart.text()).toContain('no such queue');
    });
  });

  describe('search', () => {
    beforeAll(async () => {
      for (const p of ['ear', 'hello:pear', 'search', 'html', 'html']) await t().rpc('test_search', 'prep_message', { dest: 'test_search', param1: p, src: 'test_web_search' });
    });

    it('test_web_search: RQ’s JSON route counts', async () => {
      const count = async (q: string): Promise<number> => {
        const res = await web().get(`/search?name=test_search${q}`);
        expect(res.headers.get('content-type')).toMatch(/^application\/json/);
        return ((await res.json()) as unknown[]).length;
      };
      expect(await count('')).toBe(5);
      expect(await count('&query[param1]=ear')).toBe(3);
      expect(await count('&query[param1]=ear&exact=true')).toBe(1);
      expect(await count('&query[fakestuff]=asdfasdf')).toBe(0);
      const [view] = (await (await web().get('/search?name=test_search&query[param1]=hello:pear')).json()) as Array<Record<string, unknown>>;
      expect(view).toMatchObject({ param1: 'hello:pear', state: 'prep', status: 'prep', src: 'test_web_search' });
      expect(view!['msg_id']).toMatch(ID_RE);
      expect((await web().get('/search?name=nope')).status).toBe(404);
      expect((await web().get('/search')).status).toBe(404);
      expect((await web().get('/search?name=test_search&query[a][b]=c')).status).toBe(400);
    });

    it('lists by state in RQ’s order (prep, que, run, err, done), newest first within err and done: JSON and HTML', async () => {
      const q = 'order_search';
      // err and done made in turn, so their ids interleave; then one waiting (due in an hour) and one prepared.
      const finished: string[] = [];
      for (const param1 of ['err', 'done', 'err', 'done']) finished.push(await t().send(q, { param1, param2: 'ordered' }));
      for (const id of finished) await waitFor(async () => ['err', 'done'].includes((await t().state(q, id)) ?? ''), 10_000, `${id} to finish`);
      const waiting = await t().send(q, { param2: 'ordered', due: Math.floor(Date.now() / 1000) + 3600 });
      const [, full] = (await t().rpc(q, 'prep_message', { dest: q, param2: 'ordered' })) as [string, string];
      const prepared = full.slice(full.lastIndexOf('/') + 1);
      const [err1, done1, err2, done2] = finished as [string, string, string, string];

      const json = (await (await web().get(`/search?name=${q}&query[param2]=ordered`)).json()) as Array<{ msg_id: string; state: string }>;
      // Within a state, in the order of the queue's own lists: err and done newest first.
      const expected = [
        ['prep', prepared],
        ['que', waiting],
        ['err', err2],
        ['err', err1],
        ['done', done2],
        ['done', done1],
      ];
      expect(json.map((v) => [v.state, v.msg_id])).toEqual(expected);
      const html = await (await web().get(`/search?x_format=html&q=ordered&name=${q}`)).text();
      const rows = [...html.matchAll(/<td class="msg-id"><a href="[^"]+">([^<]+)<\/a><\/td>\n<td>(\w+)<\/td>/g)].map((m) => [m[2], m[1]]);
      expect(rows).toEqual(expected);
      // Searched in every queue, it is the same.
      const everywhere = await (await web().get('/search?x_format=html&q=ordered')).text();
      expect([...everywhere.matchAll(/<td class="msg-id"><a href="[^"]+">([^<]+)<\/a><\/td>\n<td>(\w+)<\/td>/g)].map((m) => [m[2], m[1]])).toEqual(expected);
    });

    it('the HTML search finds free text in params, ids and status text, in one queue or all, by state', async () => {
      const html = async (q: string): Promise<string> => {
        const res = await web().get(`/search?x_format=html&${q}`);
        expect(res.status, q).toBe(200);
        return res.text();
      };
      const pear = await html('q=pear&name=test_search');
      expect(pear).toContain('<p id="search-count">1 message found.</p>');
      expect(pear).toContain('param1=hello:pear');
      const [id] = listedIdsOfSearch(pear);
      expect(await html('q=pear')).toContain(`href="/q/test_search/${id}"`);
      expect(await html(`q=${id}`)).toContain('<p id="search-count">1 message found.</p>');
      expect(await html('q=ear&name=test_search')).toContain('<p id="search-count">3 messages found.</p>');
      expect(await html('q=ear&name=test_search&state=que')).toContain('<p id="search-count">No messages found.</p>');
      expect(await html('q=ear&name=test_search&state=prep')).toContain('<p id="search-count">3 messages found.</p>');
      expect(await html('name=test_search&query[param1]=html&exact=1')).toContain('<p id="search-count">2 messages found.</p>');
      // Free text and query pairs together: both must hold.
      expect(await html('q=html&name=test_search&query[param1]=ear')).toContain('<p id="search-count">No messages found.</p>');
      expect(await html('q=pear&name=test_search&query[param1]=ear')).toContain('<p id="search-count">1 message found.</p>');
      // The status text of every state, waiting and prepared messages too.
      expect(await html('q=prep&name=test_search')).toContain('<p id="search-count">5 messages found.</p>');

      const done = await t().send('test', { param1: 'statusfind' });
      await t().waitState('test', done, 'done');
      const byStatus = await html('q=all%20good&name=test');
      expect(listedIdsOfSearch(byStatus)).toContain(done);
      expect(byStatus).toContain('done - all good');

      const evil = await t().send('test', { param1: '<img src=x onerror=alert(1)>', param2: 'escapeme' });
      const shown = await html('q=escapeme&name=test');
      expect(listedIdsOfSearch(shown)).toEqual([evil]);
      expect(shown).toContain('param1=&lt;img src=x onerror=alert(1)&gt;');
      expect(shown).not.toContain('<img src=x');

      const empty = await html('q=');
      expect(empty).not.toContain('search-count');
      expect(empty).toContain('<form class="card search-form"');
      expect((await web().get('/search?x_format=html&q=x&state=bogus')).status).toBe(400);
      expect((await web().get('/search?x_format=html&q=x&name=nope')).status).toBe(404);
    });
  });

  describe('queue page', () => {
    it('shows status, admin forms, config and the schedule', async () => {
      const html = await (await web().get('/q/sched')).text();
      expect(html).toContain('<title>RQ :: sched</title>');
      expect(html).toContain('<h2>RQ : sched</h2>');
      expect(html).toContain('<a class="button" href="/q/sched/new_message">New Message</a>');
      expect(html).toContain('<span id="status" class="green">UP</span>');
      expect(html).toContain(`<span id="pid">${t().pidIn('queues/sched/queue.pid')}</span>`);
      expect(html).toMatch(/<span id="uptime">running for \d+ seconds<\/span>/);
      expect(html).toContain('action="/q/sched/adminoper">\n<input type="hidden" name="back" value="/q/sched">');
      expect(html).toContain('<a href="/q/sched/config.json">raw</a>');
      expect(html).toContain('<summary>config.json</summary>');
      expect(html).toContain('  &#34;name&#34;: &#34;sched&#34;,');
      expect(html).toContain('<code>0 0 1 1 *</code>');
      expect(html).toContain('<input type="hidden" name="back" value="/q/sched">\n<input type="hidden" name="x_format" value="html">');
      for (const tab of ['PREP', 'QUE', 'RUN', 'DONE', 'ERR']) expect(html).toContain(`>${tab} <span class="count"`);
      expect(html).not.toContain('>RELAYED <span');
      expect(html).toContain('No que messages.');
    });

    it('relay’s tabs have RELAYED instead of DONE', async () => {
      const html = await (await web().get('/q/relay')).text();
      expect(html).toContain('>RELAYED <span class="count" id="relayed-count">0</span>');
      expect(html).not.toContain('>DONE <span');
    });

    it('a DOWN queue is HARD DOWN with nothing to display', async () => {
      const html = await (await web().get('/q/downq')).text();
      expect(html).toContain('Queue is HARD DOWN');
      expect(html).toContain('Nothing to display.');
      expect(html).not.toContain('class="tabs"');
    });

    it('pages que 50 at a time in the order of the que listing, with first/prev/next/last and per-message forms', async () => {
      await sendMany(t(), 'paged', 120);
      const listing = ((await t().rpc('paged', 'messages', { state: 'que' })) as Array<{ msg_id: string }>).map((m) => m.msg_id);
      expect(listing).toHaveLength(120);
      const page1 = await (await web().get('/q/paged')).text();
      expect(listedIds(page1, 'paged')).toEqual(listing.slice(0, 50));
      expect(page1).toContain('>QUE <span class="count" id="que-count">120</span>');
      expect(page1).toContain('page 1 of 3');
      expect(page1).toContain('<span class="matching-count">120</span> matching');
      expect(page1).toContain('<a href="/q/paged?state=que&amp;page=2" rel="next">');
      expect(page1).toContain('<a href="/q/paged?state=que&amp;page=3" rel="last">');
      expect(page1).not.toContain('rel="prev"');
      const first = listing[0]!;
      expect(page1).toContain(`<form class="inline" method="post" action="/q/paged/${first}"><input type="hidden" name="_method" value="run_now">`);
      expect(page1).toContain(`<form class="inline" method="post" action="/q/paged/${first}"><input type="hidden" name="_method" value="delete">`);

      const page2 = await (await web().get('/q/paged?state=que&page=2')).text();
      expect(listedIds(page2, 'paged')).toEqual(listing.slice(50, 100));
      const page3 = await (await web().get('/q/paged?state=que&page=3')).text();
      expect(listedIds(page3, 'paged')).toEqual(listing.slice(100));
      expect(page3).toContain('<a href="/q/paged?state=que&amp;page=1" rel="first">');
      expect(page3).toContain('<a href="/q/paged?state=que&amp;page=2" rel="prev">');
      expect(page3).not.toContain('rel="next"');
      expect(listedIds(await (await web().get('/q/paged?state=que&page=99')).text(), 'paged')).toEqual(listing.slice(100));

      for (const bad of ['page=0', 'page=abc', 'state=nope']) {
        const res = await web().get(`/q/paged?${bad}`);
        expect(res.status, bad).toBe(400);
      }
    });

    it('lists running messages with a destroy form, and finished ones with their status', async () => {
      const id = await t().send('running', {});
      try {
        await t().waitState('running', id, 'run');
        await waitFor(async () => (await (await web().get('/q/running?state=run')).text()).includes('<td class="status">run - hanging</td>'), 5_000, 'the run status');
        const html = await (await web().get('/q/running?state=run')).text();
        expect(listedIds(html, 'running')).toEqual([id]);
        expect(html).toContain('<td class="dest">running</td>');
        expect(html).toContain(`<form class="inline" method="post" action="/q/running/${id}"><input type="hidden" name="_method" value="destroy">`);
      } finally {
        await t().rpc('running', 'destroy_message', { msg_id: id });
      }
      const errId = await t().send('erring_page', {});
      await t().waitState('erring_page', errId, 'err');
      const err = await (await web().get('/q/erring_page?state=err')).text();
      const row = new RegExp(`<tr data-id="${errId}">[^]*?</tr>`).exec(err)?.[0] ?? '';
      expect(row).toContain(`<a href="/q/erring_page/${errId}">${errId}</a></td>`);
      expect(row).toContain('<td class="status">err - by design</td>');
    });

    it('is a 404 for a missing queue; /q/<q>/<x>/<y> is not a queue route', async () => {
      expect((await web().get('/q/nope')).status).toBe(404);
      expect((await web().get('/q/test/a/b')).status).toBe(404);
    });
  });
});

/** Message ids of the search results table. */
function listedIdsOfSearch(html: string): string[] {
  return [...html.matchAll(/<td class="msg-id"><a href="\/q\/[^/]+\/([^"]+)">/g)].map((m) => m[1]!);
}

describe('under relative_root and basic_auth, with allow_new_queue false', () => {
  const auth = { authorization: `Basic ${Buffer.from('admin:s3cret').toString('base64')}` };
  const { web } = sharedInstall({
    setup: (root) => {
      root.addQueue({ name: 'test' });
      root.addQueue({ name: 'relay', script: 'noop.sh' });
    },
    config: { relative_root: '/therq', allow_new_queue: false, basic_auth: { realm: 'rq test', users: { admin: 's3cret' } } },
  });

  it('links the main page, q.json and q.txt within the root, with no New Queue link', async () => {
    for (const p of ['/therq', '/therq/']) {
      const html = await (await web().get(p, auth)).text();
      expect(html, p).toContain('<a href="/therq/q/test">test</a>');
      expect(html, p).not.toContain('id="new-queue"');
    }
    const j = await web().get('//therq//q.json', auth);
    expect(j.status).toBe(200);
    expect(((await j.json()) as { queues: Array<{ name: string }> }).queues.map((q) => q.name)).toEqual(['test', 'relay']);
    expect(await (await web().get('/therq/q.txt', auth)).text()).toBe('/therq/q/relay.txt\n/therq/q/test.txt');
  });

  it('refuses queue creation with RQ’s bare 403 text', async () => {
    const get = await web().get('/therq/new_queue', auth);
    expect(get.status).toBe(403);
    expect(await get.text()).toBe('Queue creation not allowed at this time.');
    for (const p of ['/therq/new_queue', '/therq/new_queue_link']) {
      const res = await web().request(p, { method: 'POST', headers: auth, body: new URLSearchParams({ 'queue[name]': 'x', 'queue[json_path]': 'x.json' }) });
      expect(res.status, p).toBe(403);
      expect(await res.text(), p).toBe('Queue creation not allowed at this time.');
    }
  });

  it('redirects within the root after an admin operation', async () => {
    const res = await web().request('/therq/q/test/adminoper', { method: 'POST', headers: auth, body: new URLSearchParams({ pause: '1', back: '/therq/q/test' }) });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe(`${web().base}/therq/q/test`);
    const page = await web().request('/therq/q/test', { headers: auth });
    const html = await page.text();
    expect(flashOf(html)).toBe('Successfully paused queue test');
    expect(html).toContain('<button type="submit" name="resume" value="resume">resume</button>');
    expect(html).toContain('action="/therq/q/test/adminoper">\n<input type="hidden" name="back" value="/therq/q/test">');
  });
});
