/**
 * Files of a message over HTTP (docs/http-api.md, issue 3's live tail), against a
 * real rq-mgr and web process: log and attachment downloads byte for byte, byte ranges
 * (206, 416, several ranges → 200), If-Modified-Since → 304, content types, paths that
 * try to leave the message directory (`..`, `%2e%2e`, `%2f`, backslashes, dot-files,
 * symlinks, a FIFO), the tail viewer pages, and the live tail over Server-Sent Events:
 * ANSI colours as escaped HTML, complete lines only, chunks while the script still runs,
 * `event: end` with the final state, exact resumption with Last-Event-ID, the 256 KiB
 * window of a first connection, many viewers at once, and no fd left behind by clients
 * that go away.
 */
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { shortId, waitFor, type TestRoot } from '../helpers/install.js';
import { sharedInstall } from '../helpers/web.js';
import { fdCount, webPid } from '../helpers/web-process.js';

interface SseEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/** Reads a text/event-stream body event by event (comments skipped). */
class SseReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = '';

  constructor(res: Response) {
    this.reader = res.body!.getReader();
  }

  /** The next event, or undefined when the stream is over. */
  async next(): Promise<SseEvent | undefined> {
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const ev: SseEvent = { event: 'message', data: '', id: undefined };
        const data: string[] = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'event') ev.event = value;
          else if (field === 'data') data.push(value);
          else if (field === 'id') ev.id = value;
        }
        if (data.length === 0 && ev.id === undefined) continue;
        ev.data = data.join('\n');
        return ev;
      }
      const { done, value } = await this.reader.read();
      if (done) return undefined;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  /** Events up to and including the first one that `stop` accepts. */
  async until(stop: (e: SseEvent) => boolean): Promise<SseEvent[]> {
    const seen: SseEvent[] = [];
    for (;;) {
      const e = await this.next();
      if (!e) throw new Error(`the stream ended after ${JSON.stringify(seen)}`);
      seen.push(e);
      if (stop(e)) return seen;
    }
  }

  /** Everything up to the end of the stream. */
  async rest(): Promise<SseEvent[]> {
    const seen: SseEvent[] = [];
    for (let e = await this.next(); e; e = await this.next()) seen.push(e);
    return seen;
  }
}

/** The HTML of the chunk events. */
function chunks(events: SseEvent[]): string[] {
  return events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data) as string);
}

/** The text a browser shows for the tail's HTML. */
function textOf(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

function stripAnsi(text: string): string {
  return text.replace(/\x1b\[[\d;]*m/g, '');
}

const isChunkWith = (text: string) => (e: SseEvent): boolean => e.event === 'message' && textOf(JSON.parse(e.data) as string).includes(text);

/** The directory of a message now, from its queue's answer. */
async function messageDir(t: TestRoot, queue: string, id: string): Promise<string> {
  const status = (await t.rpc(queue, 'get_message_status', { msg_id: id })) as [string, { path: string }];
  return path.join(t.root, status[1].path);
}

describe('downloads and the tail viewer', () => {
  let id: string;
  let dir: string;
  const blob = crypto.randomBytes(1_492_960);
  const files: Record<string, Buffer> = {
    'blob.bin': blob,
    'pic.png': crypto.randomBytes(96_007),
    'data.json': Buffer.from('{"a":1}\n'),
    'notes.txt': Buffer.from('first note\n\x1b[31mred note\x1b[0m <i>x</i>\n'),
    'a "b" \'c\'.txt': Buffer.from('quoted name\n'),
    'empty.txt': Buffer.alloc(0),
    'unfinished.txt': Buffer.from('line one\nno newline at the end'),
  };
  const logOf = (): Buffer => fs.readFileSync(path.join(dir, 'job/stdio.log'));

  const { t, web } = sharedInstall({
    setup: (root) => root.addQueue({ name: 'files', script: 'done.sh' }),
    ready: async (root) => {
      const full = (await root.rpc('files', 'prep_message', { dest: 'files' })) as [string, string];
      id = shortId(full[1]);
      const src = fs.mkdtempSync(path.join(root.root, 'tmp', 'att-'));
      for (const [name, bytes] of Object.entries(files)) {
        const file = path.join(src, 'upload');
        fs.writeFileSync(file, bytes);
        const reply = (await root.rpc('files', 'attach_message', { msg_id: id, pathname: file, name })) as [string, string];
        expect(reply[0], name).toBe('ok');
        fs.rmSync(file);
      }
      expect(await root.rpc('files', 'commit_message', { msg_id: id })).toEqual(['ok', 'msg commited']);
      await root.waitState('files', id, 'done');
      dir = await messageDir(root, 'files', id);
    },
  });

  const bytesOf = async (res: Response): Promise<Buffer> => Buffer.from(await res.arrayBuffer());

  it('sends the log as raw text/plain bytes with Last-Modified', async () => {
    const res = await web().get(`/q/files/${id}/log/stdio.log`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(res.headers.get('last-modified')).toBe(new Date(Math.floor(fs.statSync(path.join(dir, 'job/stdio.log')).mtimeMs / 1000) * 1000).toUTCString());
    const body = await bytesOf(res);
    expect(body.equals(logOf())).toBe(true);
    expect(body.toString()).toContain(`working on ${id}`);
  });

  it('sends every attachment byte for byte, typed by its extension', async () => {
    const types: Record<string, string> = {
      'blob.bin': 'application/octet-stream',
      'pic.png': 'image/png',
      'data.json': 'application/json',
      'notes.txt': 'text/plain; charset=utf-8',
      'a "b" \'c\'.txt': 'text/plain; charset=utf-8',
      'empty.txt': 'text/plain; charset=utf-8',
      'unfinished.txt': 'text/plain; charset=utf-8',
    };
    for (const [name, bytes] of Object.entries(files)) {
      const res = await web().get(`/q/files/${id}/attach/${encodeURIComponent(name)}`);
      expect(res.status, name).toBe(200);
      expect(res.headers.get('content-type'), name).toBe(types[name]);
      expect(Number(res.headers.get('content-length')), name).toBe(bytes.length);
      expect((await bytesOf(res)).equals(bytes), name).toBe(true);
    }
  });

  it('answers one byte range with 206 and Content-Range', async () => {
    const size = blob.length;
    const cases: [string, number, number][] = [
      ['bytes=0-99', 0, 99],
      ['bytes=1000000-', 1_000_000, size - 1],
      ['bytes=-100', size - 100, size - 1],
      ['bytes=1400000-9999999', 1_400_000, size - 1],
    ];
    for (const [range, start, end] of cases) {
      const res = await web().get(`/q/files/${id}/attach/blob.bin`, { range });
      expect(res.status, range).toBe(206);
      expect(res.headers.get('content-range'), range).toBe(`bytes ${start}-${end}/${size}`);
      expect((await bytesOf(res)).equals(blob.subarray(start, end + 1)), range).toBe(true);
    }
    const log = logOf();
    const res = await web().get(`/q/files/${id}/log/stdio.log`, { range: 'bytes=5-' });
    expect(res.status).toBe(206);
    expect((await bytesOf(res)).equals(log.subarray(5))).toBe(true);
  });

  it('answers an unsatisfiable range with 416 and bytes */<size>', async () => {
    for (const [file, size] of [
      [`attach/blob.bin`, blob.length],
      [`log/stdio.log`, logOf().length],
      [`attach/empty.txt`, 0],
    ] as const) {
      const res = await web().get(`/q/files/${id}/${file}`, { range: `bytes=${size}-` });
      expect(res.status, file).toBe(416);
      expect(res.headers.get('content-range'), file).toBe(`bytes */${size}`);
      expect(await res.text(), file).toBe('Byte range unsatisfiable\n');
    }
  });

  it('sends the whole file with 200 for several ranges or a malformed Range', async () => {
    for (const range of ['bytes=0-1,5-9', 'bytes=0-1,2-3', 'bytes=x-y', 'items=0-5']) {
      const res = await web().get(`/q/files/${id}/attach/blob.bin`, { range });
      expect(res.status, range).toBe(200);
      expect(res.headers.get('content-range'), range).toBeNull();
      expect((await bytesOf(res)).equals(blob), range).toBe(true);
    }
  });

  it('answers If-Modified-Since at or after Last-Modified with 304', async () => {
    const first = await web().get(`/q/files/${id}/attach/pic.png`);
    await first.arrayBuffer();
    const lastModified = first.headers.get('last-modified')!;
    const same = await web().get(`/q/files/${id}/attach/pic.png`, { 'if-modified-since': lastModified });
    expect(same.status).toBe(304);
    expect(await same.text()).toBe('');
    const older = await web().get(`/q/files/${id}/attach/pic.png`, { 'if-modified-since': new Date(Date.parse(lastModified) - 86_400_000).toUTCString() });
    expect(older.status).toBe(200);
    expect((await bytesOf(older)).length).toBe(files['pic.png']!.length);
  });

  it('answers a missing log, attachment, message or queue with the Not Found page', async () => {
    for (const p of [
      `/q/files/${id}/log/nope.log`,
      `/q/files/${id}/attach/nope.bin`,
      `/q/files/20990101.0000.00.000.1/log/stdio.log`,
      `/q/files/20990101.0000.00.000.1/attach/blob.bin`,
      `/q/nosuchqueue/${id}/log/stdio.log`,
      `/q/files/${id}/tailview/nope.bin`,
      `/q/files/20990101.0000.00.000.1/tailviewlog/stdio.log`,
      `/q/files/20990101.0000.00.000.1/events/stdio.log`,
    ]) {
      const res = await web().get(p);
      expect(res.status, p).toBe(404);
      expect(await res.text(), p).toContain('<h2>Not Found</h2>');
    }
  });

  it('never leaves the directory: .., %2e%2e, %2f, backslashes and dot-files are not found', async () => {
    fs.writeFileSync(path.join(dir, 'job/.hidden'), 'secret');
    const msg = fs.readFileSync(path.join(dir, 'msg'), 'utf8');
    for (const p of [
      `/q/files/${id}/log/..%2fmsg`,
      `/q/files/${id}/log/%2e%2e%2fmsg`,
      `/q/files/${id}/log/%2e%2e%2f%2e%2e%2f%2e%2e%2fconfig.json`,
      `/q/files/${id}/attach/..%2f..%2fmsg`,
      `/q/files/${id}/log/%252e%252e%252fmsg`,
      `/q/files/${id}/log/..%5cmsg`,
      `/q/files/${id}/log/.hidden`,
      `/q/files/${id}/log/%2ehidden`,
      `/q/files/..%2f..%2f${id}/log/stdio.log`,
      `/q/files/${id}/events/..%2fmsg`,
      `/q/files/${id}/tailviewlog/..%2fmsg`,
    ]) {
      const res = await web().get(p);
      const body = await res.text();
      expect(res.status, p).toBe(404);
      expect(body, p).not.toContain('secret');
      expect(body, p).not.toContain(msg);
    }
    for (const p of [`/q/files/${id}/log/../msg`, `/q/files/${id}/log/../../../../config/config.json`]) {
      const reply = await web().raw(`GET ${p} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(reply, p).toMatch(/^HTTP\/1\.1 404 /);
      expect(reply, p).not.toContain(msg);
    }
  });

  it('refuses symlinks that leave job/, FIFOs and directories; follows a symlink within job/', async () => {
    const job = path.join(dir, 'job');
    fs.symlinkSync(path.join(t().root, 'config/config.json'), path.join(job, 'escape.log'));
    fs.symlinkSync('../msg', path.join(job, 'up.json'));
    fs.symlinkSync('/etc/passwd', path.join(job, 'passwd.txt'));
    fs.symlinkSync('stdio.log', path.join(job, 'inside.log'));
    fs.mkdirSync(path.join(job, 'sub.log'));
    execFileSync('mkfifo', [path.join(job, 'pipe.log')]);
    for (const name of ['escape.log', 'up.json', 'passwd.txt', 'sub.log', 'pipe.log']) {
      const res = await web().get(`/q/files/${id}/log/${name}`);
      expect(res.status, name).toBe(404);
      expect(await res.text(), name).toContain('<h2>Not Found</h2>');
    }
    const inside = await web().get(`/q/files/${id}/log/inside.log`);
    expect(inside.status).toBe(200);
    expect((await bytesOf(inside)).equals(logOf())).toBe(true);
  });

  it('refuses a message whose attach/ directory is itself a symlink to elsewhere', async () => {
    const full = (await t().rpc('files', 'prep_message', { dest: 'files' })) as [string, string];
    const prepId = shortId(full[1]);
    const outside = fs.mkdtempSync(path.join(t().root, 'tmp', 'outside-'));
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret outside the message\n');
    const attach = path.join(t().queueDir('files'), 'prep', prepId, 'attach');
    fs.rmSync(attach, { recursive: true, force: true });
    fs.symlinkSync(outside, attach);
    for (const p of [`/q/files/${prepId}/attach/secret.txt`, `/q/files/${prepId}/tailview/secret.txt`]) {
      const res = await web().get(p);
      expect(res.status, p).toBe(404);
      expect(await res.text(), p).not.toContain('secret outside');
    }
  });

  it('closes the file of a download the client drops', async () => {
    const pid = webPid(t());
    const before = fdCount(pid);
    await Promise.all(
      Array.from({ length: 20 }, () => new Promise<void>((resolve, reject) => {
        const sock = net.connect(web().port, '127.0.0.1');
        sock.on('error', reject);
        sock.once('data', () => sock.destroy());
        sock.on('close', () => resolve());
        sock.write(`GET /q/files/${id}/attach/blob.bin HTTP/1.1\r\nHost: x\r\n\r\n`);
      })),
    );
    await waitFor(() => fdCount(pid) <= before, 10_000, `the web's fds to fall back to ${before}`);
  });

  it('draws the tail viewer with its config in data attributes and no inline script', async () => {
    const res = await web().get(`/q/files/${id}/tailviewlog/stdio.log`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(html).toContain('<body class="tailview">');
    expect(html).toContain(`data-events="/q/files/${id}/events/stdio.log"`);
    expect(html).toContain(`href="/q/files/${id}/log/stdio.log"`);
    expect(textOf(html)).toContain('Lines 0-0 of 0');
    expect(html).toContain('Tail scroll to bottom');
    expect(html).toMatch(/<input type="checkbox" id="tail-follow" checked>/);
    expect(html).not.toContain('id="flash-container"');
    const scripts = html.match(/<script\b[^>]*>[^<]*<\/script>/g) ?? [];
    expect(scripts).toEqual(['<script src="/js/live-tail.js"></script>', '<script src="/js/tailview.js"></script>']);
    expect(html.match(/<script\b/g)).toHaveLength(2);
    expect(html).not.toMatch(/\son\w+\s*=/i);
  });

  it('draws the tail viewer of an attachment, with its name escaped and encoded', async () => {
    const name = 'a "b" \'c\'.txt';
    const res = await web().get(`/q/files/${id}/tailview/${encodeURIComponent(name)}`);
    expect(res.status).toBe(200);
    const html = await res.text();
    const encoded = encodeURIComponent(name);
    // encodeURIComponent leaves ' alone; the attribute escapes it.
    expect(html).toContain(`data-events="/q/files/${id}/events/attach/${encoded.replace(/'/g, '&#39;')}"`);
    expect(html).toContain(`href="/q/files/${id}/attach/${encoded.replace(/'/g, '&#39;')}"`);
    expect(html).toContain('a &#34;b&#34; &#39;c&#39;.txt');
    expect(html).not.toContain(name);
  });

  it('serves the static scripts the pages load', async () => {
    for (const js of ['live-tail.js', 'tailview.js']) {
      const res = await web().get(`/js/${js}`);
      expect(res.status, js).toBe(200);
      expect(res.headers.get('content-type'), js).toMatch(/javascript/);
    }
  });

  it('streams a finished log at once and ends with its state', async () => {
    const res = await web().get(`/q/files/${id}/events/stdio.log`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('x-accel-buffering')).toBe('no');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const events = await new SseReader(res).rest();
    expect(events[0]).toEqual({ event: 'state', data: 'done', id: undefined });
    expect(events.at(-1)).toEqual({ event: 'end', data: 'done', id: undefined });
    expect(textOf(chunks(events).join(''))).toBe(logOf().toString());
    expect(events.filter((e) => e.event === 'message').at(-1)!.id).toBe(String(logOf().length));
  });

  it('streams an attachment, its ANSI colours rendered and its text escaped', async () => {
    const res = await web().get(`/q/files/${id}/events/attach/notes.txt`);
    const events = await new SseReader(res).rest();
    const html = chunks(events).join('');
    expect(html).toContain('<span style="color:');
    expect(html).toContain('&lt;i&gt;x&lt;/i&gt;');
    expect(textOf(html)).toBe(stripAnsi(files['notes.txt']!.toString()));
    expect(events.at(-1)).toEqual({ event: 'end', data: 'done', id: undefined });
  });

  it('flushes an unfinished last line when the message is no longer running', async () => {
    const events = await new SseReader(await web().get(`/q/files/${id}/events/attach/unfinished.txt`)).rest();
    expect(textOf(chunks(events).join(''))).toBe('line one\nno newline at the end');
    expect(events.filter((e) => e.event === 'message').at(-1)!.id).toBe(String(files['unfinished.txt']!.length));
  });

  it('refuses a start offset that is not a byte count', async () => {
    for (const from of ['abc', '-1', '1.5', '99999999999999999999', '%3Cb%3Ex']) {
      const res = await web().get(`/q/files/${id}/events/stdio.log?from=${from}`);
      expect(res.status, from).toBe(400);
      const body = await res.text();
      expect(body, from).toMatch(/^400 - Expected the start offset/);
      expect(body, from).not.toContain('<b>');
    }
    const res = await web().get(`/q/files/${id}/events/stdio.log`, { 'last-event-id': 'x' });
    expect(res.status).toBe(400);
  });
});

describe('the live tail', () => {
  const { t, web } = sharedInstall({
    setup: (root) => {
      root.addQueue({ name: 'live', script: 'ansi-slow.sh', num_workers: 4 });
      // Paused: a message sent to `later` stays in que until the flag file goes.
      root.addQueue({ name: 'later', script: 'ansi-slow.sh' });
      fs.writeFileSync(path.join(root.root, 'config/later.pause'), '');
    },
  });

  const msgDir = (id: string): Promise<string> => messageDir(t(), 'live', id);
  /** Let the script past its wait for `go` (it must be running). */
  const release = async (id: string, queue = 'live'): Promise<void> => {
    await t().waitState(queue, id, 'run');
    fs.writeFileSync(path.join(await messageDir(t(), queue, id), 'job/go'), '');
  };
  const eventsOf = (id: string, init: RequestInit = {}): Promise<Response> => fetch(`${web().base}/q/live/${id}/events/stdio.log`, init);

  it('streams coloured, escaped, complete lines while the script runs, then ends with done', async () => {
    const id = await t().send('live', {});
    const res = await eventsOf(id);
    expect(res.status).toBe(200);
    const sse = new SseReader(res);
    const early = await sse.until(isChunkWith('green part one'));
    // The script waits for `go`: these chunks came while the message was in run.
    expect(await t().state('live', id)).toBe('run');
    expect(textOf(chunks(early).join(''))).not.toContain('partial line');
    await release(id);
    const rest = await sse.until((e) => e.event === 'end');
    expect(rest.at(-1)!.data).toBe('done');
    expect(await sse.next()).toBeUndefined();

    const all = [...early, ...rest];
    const html = chunks(all).join('');
    expect(html).toContain('<span style="color:');
    expect(html).toContain('&lt;b&gt;bold?&lt;/b&gt; &amp; line');
    expect(html).not.toContain('<b>bold?');
    expect(chunks(all).some((c) => textOf(c).includes('partial line... finished\n'))).toBe(true);
    const text = textOf(html);
    const order = ['plain first line', 'red <b>bold?</b> & line', 'green part one', 'partial line... finished', 'blue part two'].map((s) => text.indexOf(s));
    expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1]!))).toBe(true);

    const log = fs.readFileSync(path.join(await msgDir(id), 'job/stdio.log'));
    expect(text).toBe(stripAnsi(log.toString()));
    const ids = all.filter((e) => e.event === 'message').map((e) => Number(e.id));
    expect(ids.every((n, i) => i === 0 || n > ids[i - 1]!)).toBe(true);
    expect(ids.at(-1)).toBe(log.length);
    expect(all.filter((e) => e.event === 'state').map((e) => e.data)).toContain('run');
  });

  it('resumes exactly at Last-Event-ID (or ?from=) without repeating a line', async () => {
    const id = await t().send('live', {});
    const first = new SseReader(await eventsOf(id));
    const early = await first.until(isChunkWith('plain first line'));
    const resumeAt = early.filter((e) => e.event === 'message').at(-1)!.id!;
    await release(id);
    await first.rest();
    const log = fs.readFileSync(path.join(await msgDir(id), 'job/stdio.log'));

    const again = await new SseReader(await eventsOf(id, { headers: { 'last-event-id': resumeAt } })).rest();
    const text = textOf(chunks(again).join(''));
    expect(text).toBe(stripAnsi(log.subarray(Number(resumeAt)).toString()));
    expect(text).not.toContain('plain first line');
    expect(text).toContain('blue part two');
    expect(again.at(-1)).toEqual({ event: 'end', data: 'done', id: undefined });

    const from = await new SseReader(await fetch(`${web().base}/q/live/${id}/events/stdio.log?from=${resumeAt}`)).rest();
    expect(textOf(chunks(from).join(''))).toBe(text);
    const atEnd = await new SseReader(await eventsOf(id, { headers: { 'last-event-id': String(log.length) } })).rest();
    expect(chunks(atEnd)).toEqual([]);
    expect(atEnd.at(-1)!.event).toBe('end');
  });

  it('sends a first connection at most the last 256 KiB, from a line start, and says what it skipped', async () => {
    const id = await t().send('live', { param1: '40000' });
    // Connect once the big part is written (the window is taken when the file is opened).
    await waitFor(async () => (await t().statusOf('live', id)) === 'run - waiting for go', 10_000, 'the first part to be written');
    const sse = new SseReader(await eventsOf(id));
    const early = await sse.until(isChunkWith('green part one'));
    await release(id);
    const events = [...early, ...(await sse.rest())];
    const log = fs.readFileSync(path.join(await msgDir(id), 'job/stdio.log'));
    const skipped = events.find((e) => e.event === 'skipped');
    expect(skipped).toBeDefined();
    const offset = Number(skipped!.data);
    expect(log.length).toBeGreaterThan(600_000);
    expect(offset).toBeGreaterThan(0);
    expect(log[offset - 1]).toBe(0x0a);
    expect(offset - 1).toBeGreaterThanOrEqual(log.length - 256 * 1024 - 100);
    expect(textOf(chunks(events).join(''))).toBe(stripAnsi(log.subarray(offset).toString()));

    const whole = await new SseReader(await fetch(`${web().base}/q/live/${id}/events/stdio.log?from=0`)).rest();
    expect(whole.find((e) => e.event === 'skipped')).toBeUndefined();
    expect(textOf(chunks(whole).join(''))).toBe(stripAnsi(log.toString()));
  });

  it('serves 32 viewers of one running message at once and refuses the 33rd with a 503', async () => {
    const id = await t().send('live', {});
    const readers = await Promise.all(Array.from({ length: 32 }, async () => new SseReader(await eventsOf(id))));
    const refused = await eventsOf(id);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await refused.text()).toBe(`503 - Too many live tails of message live/${id} open (at most 32 at once): try again later\n`);
    // Another message is not affected.
    const other = await t().send('live', {});
    const otherTail = await eventsOf(other);
    expect(otherTail.status).toBe(200);
    await otherTail.body!.cancel();
    const early = await Promise.all(readers.map((r) => r.until(isChunkWith('green part one'))));
    await release(id);
    const all = await Promise.all(readers.map(async (r, i) => [...early[i]!, ...(await r.rest())]));
    const texts = all.map((events) => textOf(chunks(events).join('')));
    expect(new Set(texts).size).toBe(1);
    expect(texts[0]).toContain('blue part two');
    for (const events of all) expect(events.at(-1)).toEqual({ event: 'end', data: 'done', id: undefined });
    // The places are given back when the streams end.
    expect((await eventsOf(id)).status).toBe(200);
    await release(other);
    await t().waitState('live', other, 'done');
  });

  it('waits for a queued message to start, then tails it', async () => {
    const id = await t().send('later', {});
    const sse = new SseReader(await fetch(`${web().base}/q/later/${id}/events/stdio.log`));
    expect(await sse.next()).toEqual({ event: 'state', data: 'que', id: undefined });
    fs.rmSync(path.join(t().root, 'config/later.pause'));
    await sse.until(isChunkWith('green part one'));
    await release(id, 'later');
    const rest = await sse.rest();
    expect(rest.at(-1)).toEqual({ event: 'end', data: 'done', id: undefined });
  });

  it('leaks no fd when clients go away mid-stream', async () => {
    const pid = webPid(t());
    const id = await t().send('live', {});
    /** A client that reads until the file's first line came, then drops the connection. */
    const connectAndDrop = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const sock = net.connect(web().port, '127.0.0.1');
        let seen = '';
        sock.on('error', reject);
        sock.on('data', (c: Buffer) => {
          seen += c.toString();
          if (seen.includes('plain first line')) {
            sock.destroy();
            resolve();
          }
        });
        sock.write(`GET /q/live/${id}/events/stdio.log HTTP/1.1\r\nHost: x\r\n\r\n`);
      });
    const idle = fdCount(pid);
    await connectAndDrop(); // the first fs.watch opens the process's one inotify fd for good
    await waitFor(() => fdCount(pid) <= idle + 1, 10_000, 'the first viewer to be cleaned up');
    const before = fdCount(pid);
    for (let i = 0; i < 30; i++) await connectAndDrop();
    await Promise.all(Array.from({ length: 20 }, connectAndDrop));
    // Clients gone before the reply started (while the message is looked up).
    await Promise.all(
      Array.from({ length: 20 }, () => new Promise<void>((resolve) => {
        const sock = net.connect(web().port, '127.0.0.1', () => {
          sock.write(`GET /q/live/${id}/events/stdio.log HTTP/1.1\r\nHost: x\r\n\r\n`, () => sock.destroy());
        });
        sock.on('close', () => resolve());
      })),
    );
    await waitFor(() => fdCount(pid) <= before, 10_000, `the web's fds to fall back to ${before}`);
    await release(id);
    await t().waitState('live', id, 'done');
  });
});

describe('the caps on live tails', () => {
  const MAX = 3;
  const { t, web } = sharedInstall({
    // No worker: messages stay in que, their log not there yet.
    setup: (root) => root.addQueue({ name: 'waiting', script: 'done.sh', num_workers: 0 }),
    env: { RQ_WEB_MAX_TAILS: String(MAX) },
  });

  /** A live tail of a waiting message; abort() drops its connection. */
  const tail = async (id: string): Promise<{ res: Response; abort: () => void }> => {
    const ac = new AbortController();
    const res = await fetch(`${web().base}/q/waiting/${id}/events/stdio.log`, { signal: ac.signal });
    return { res, abort: () => ac.abort() };
  };

  it('refuses live tails beyond RQ_WEB_MAX_TAILS with a 503 and frees a place when a viewer goes', async () => {
    const [a, b, c] = [await t().send('waiting', {}), await t().send('waiting', {}), await t().send('waiting', {})];
    const open = [await tail(a), await tail(a), await tail(b)];
    for (const o of open) expect(o.res.status).toBe(200);
    expect(await new SseReader(open[0]!.res).next()).toEqual({ event: 'state', data: 'que', id: undefined });

    const refused = await tail(c);
    expect(refused.res.status).toBe(503);
    expect(refused.res.headers.get('retry-after')).toBe('30');
    expect(await refused.res.text()).toBe(`503 - Too many live tails open (at most ${MAX} at once): try again later\n`);

    // A viewer that goes away gives its place back.
    open[2]!.abort();
    let next: Awaited<ReturnType<typeof tail>> | undefined;
    await waitFor(async () => {
      const attempt = await tail(c);
      if (attempt.res.status === 200) next = attempt;
      else await attempt.res.text();
      return next !== undefined;
    }, 10_000, 'a place to be free again');
    const again = await tail(b);
    expect(again.res.status).toBe(503);
    await again.res.text();
    next!.abort();
    open[1]!.abort();
    open[0]!.abort();
  });
});
