/**
 * The body budget of the web process (issue 18, "Bounded resources"; lib/body-budget.ts):
 * the bodies of all requests in flight, on the web and on the pull front doors together,
 * are held within RQ_WEB_BODY_BUDGET bytes (here 1,000,000, so that two bodies of
 * 400,000 fit and a third does not). A request holds the bytes of its body that have
 * arrived, not the length it declares: so a client that declares much and sends little
 * does not shut the others out. Beyond the budget a request gets a 503 with
 * `Retry-After` and a one-line reason in its door's words; what a request held is given
 * back when its response is over, however it ends (answered, refused, bad, or its client
 * gone). The web does not read compressed bodies (415).
 *
 * Requests are held open by sending their head and all but the last bytes of their body,
 * the rest later; the web's `/metrics` (rq_web_request_body_bytes) tells when the web
 * holds what they sent.
 */
import net from 'node:net';
import zlib from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { sharedRoot, waitFor } from '../helpers/install.js';
import { startProtocols } from '../helpers/protocols.js';

const BUDGET = 1_000_000;
const BODY = 400_000;
const NS = 'budget';

/** The bytes of a body that a held request leaves unsent. */
const TAIL = 10;

interface Sent {
  /** Send the head (once) and the body up to its `bytes`th byte; resolves with the reply (one that comes before the body's end). */
  upTo(bytes: number): Promise<string>;
  /** Send the head and all the body but its last TAIL bytes; returns the body bytes sent. */
  hold(): number;
  /** Send the rest; resolves with the whole reply. */
  finish(): Promise<string>;
  /** The client goes away. */
  gone(): void;
}

/** The test's connections still open: a failed test closes them, so that the next one finds the budget free. */
const open = new Set<net.Socket>();
afterEach(() => {
  for (const sock of open) sock.destroy();
});

/**
 * One request to `port`: `head` (its lines, without the blank line and Content-Length)
 * and `body`, sent as the test says. The reply is complete at its Content-Length (the
 * connection may stay open: closing it with the body unread could reset it before the
 * reply is read).
 */
function request(port: number, head: string, body: Buffer): Sent {
  const sock = net.connect(port, '127.0.0.1');
  open.add(sock);
  sock.once('close', () => open.delete(sock));
  const reply = new Promise<string>((resolve) => {
    let got = Buffer.alloc(0);
    const done = (): void => {
      resolve(got.toString('latin1'));
      sock.destroy();
    };
    sock.on('data', (c: Buffer) => {
      got = Buffer.concat([got, c]);
      const end = got.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(got.subarray(0, end).toString('latin1'))?.[1];
      if (end >= 0 && length !== undefined && got.length >= end + 4 + Number(length)) done();
    });
    sock.on('error', () => undefined);
    sock.on('close', done);
  });
  const all = Buffer.concat([Buffer.from(`${head}\r\nContent-Length: ${body.length}\r\n\r\n`, 'latin1'), body]);
  const bodyStart = all.length - body.length;
  let sent = 0;
  const upTo = (bytes: number): Promise<string> => {
    const end = bodyStart + bytes;
    if (end > sent) sock.write(all.subarray(sent, end));
    sent = Math.max(sent, end);
    return reply;
  };
  return {
    upTo,
    hold: () => {
      void upTo(body.length - TAIL);
      return body.length - TAIL;
    },
    finish: () => upTo(body.length),
    gone: () => void sock.destroy(),
  };
}

const status = (reply: string): number => Number(/^HTTP\/1\.1 (\d{3}) /.exec(reply)?.[1]);
const replyBody = (reply: string): string => reply.slice(reply.indexOf('\r\n\r\n') + 4);

/** A front door: a request with a body of about `size` bytes, and what its success and its refusal look like. */
interface Door {
  name: 'web' | 'cloudq' | 'rqms' | 'lmstfy';
  head(): string;
  body(size: number): Buffer;
  /** A body of `size` bytes that the door refuses as bad (400). */
  bad(size: number): Buffer;
  ok: number;
  busy: string;
  /**
   * It refuses a body at once, before reading the rest (RQMS leaves the rest to Node,
   * lmstfy closes the connection): a client still sending might lose the reply to a
   * reset, so the test sends only what does not fit. The web and Cloudq read the body
   * first.
   */
  refusesAtOnce: boolean;
}

let item = 0;
const DOORS: Door[] = [
  {
    name: 'web',
    head: () => 'POST /q/test/new_message HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded',
    body: (size) => Buffer.from(`x_format=json&mesg=${encodeURIComponent(JSON.stringify({ dest: 'test', param1: 'w'.repeat(size - 80) }))}`),
    bad: (size) => Buffer.from(`x_format=json&mesg=${'{'.repeat(size - 20)}`),
    ok: 200,
    refusesAtOnce: false,
    busy: '503 - Request bodies in memory are at their limit of 1000000 bytes (all requests together): try again later',
  },
  {
    name: 'cloudq',
    head: () => `POST /${NS} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json`,
    body: (size) => Buffer.from(JSON.stringify({ klass: 'K', args: ['c'.repeat(size - 30)] })),
    bad: (size) => Buffer.from(`[${'c'.repeat(size - 1)}`),
    ok: 200,
    refusesAtOnce: false,
    busy: '{"status":"error","message":"server busy, try again later"}',
  },
  {
    name: 'rqms',
    head: () => `POST /${NS}?id=item${++item} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json`,
    body: (size) => Buffer.from(JSON.stringify('r'.repeat(size - 2))),
    bad: (size) => Buffer.from(`"${'r'.repeat(size - 1)}`),
    ok: 201,
    refusesAtOnce: true,
    busy: 'My hands are full just now. Do try again in a moment.',
  },
  {
    name: 'lmstfy',
    head: () => `PUT /api/${NS}/q/bulk HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json`,
    body: (size) => Buffer.from(JSON.stringify(Array.from({ length: Math.ceil(size / 50_000) }, () => ({ d: 'l'.repeat(50_000 - 20) })))),
    bad: (size) => Buffer.from(`[${'l'.repeat(size - 1)}`),
    ok: 201,
    refusesAtOnce: true,
    busy: '{"error":"server busy, try again later"}',
  },
];

describe('body budget', () => {
  const shared = sharedRoot((t) => {
    t.addQueue({ name: 'test', script: 'done.sh' });
    return startProtocols(t, { cloudq: {}, rqms: {}, lmstfy: { auth: false } }, { env: { RQ_WEB_BODY_BUDGET: String(BUDGET) } });
  });
  const port = (door: Door): number => (door.name === 'web' ? shared.started().web.port : shared.started().port(door.name));
  const send = (door: Door, body: Buffer): Promise<string> => {
    const r = request(port(door), door.head(), body);
    r.hold();
    return r.finish();
  };
  /** A metric of the web process's body budget. */
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${shared.started().web.base}/metrics`)).text();
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
  };
  /** Wait until the web holds `bytes` of bodies. */
  const holding = (bytes: number): Promise<void> =>
    waitFor(async () => (await metric('rq_web_request_body_bytes')) === bytes, 10_000, `the web to hold ${bytes} bytes of bodies`);
  /** Two requests of BODY bytes on `a` and `b`, all but TAIL bytes sent, held by the web. */
  const holdTwo = async (a: Door, b: Door): Promise<Sent[]> => {
    const held = [request(port(a), a.head(), a.body(BODY)), request(port(b), b.head(), b.body(BODY))];
    let sent = 0;
    for (const r of held) sent += r.hold();
    await holding(sent);
    return held;
  };
  /**
   * A body of BODY bytes sent to `door` while two are held: its refusal, once the bytes
   * that arrived do not fit (a door that refuses at once gets no more than those).
   */
  const refused = async (door: Door): Promise<string> => {
    const r = request(port(door), door.head(), door.body(BODY));
    const reply = r.upTo(BUDGET + 1 - (await metric('rq_web_request_body_bytes')));
    return door.refusesAtOnce ? reply : r.finish();
  };

  for (const door of DOORS) {
    it(`${door.name}: refuses a body beyond the budget with 503, Retry-After and a reason, lets the others through, then takes bodies again`, async () => {
      const refusals = await metric('rq_web_request_body_refusals_total');
      const held = await holdTwo(door, door);
      const refusal = await refused(door);
      expect(status(refusal)).toBe(503);
      expect(refusal).toMatch(/\r\nRetry-After: 5\r\n/i);
      expect(replyBody(refusal)).toBe(door.busy);
      expect(await metric('rq_web_request_body_refusals_total')).toBe(refusals + 1);
      for (const r of held) expect(status(await r.finish())).toBe(door.ok);
      await holding(0);
      expect(status(await send(door, door.body(BUDGET - 60_000)))).toBe(door.ok);
      await holding(0);
    });

    it(`${door.name}: gives back what a request held when its client goes away mid-body, and after a bad body`, async () => {
      const held = await holdTwo(door, door);
      for (const r of held) r.gone();
      await holding(0);
      for (let i = 0; i < 3; i++) expect(status(await send(door, door.bad(BODY)))).toBe(400);
      await holding(0);
      expect(status(await send(door, door.body(BUDGET - 60_000)))).toBe(door.ok);
    });
  }

  it('web: holds a multipart body as it comes, but not what goes to its files', async () => {
    const post = (form: FormData): Promise<Response> => fetch(`${shared.started().web.base}/q/test/new_message`, { method: 'POST', body: form });
    const withFile = new FormData();
    withFile.set('x_format', 'json');
    withFile.set('mesg', JSON.stringify({ dest: 'test' }));
    withFile.set('filedata', new Blob([Buffer.alloc(3 * BUDGET, 'f')]), 'big.bin');
    expect((await post(withFile)).status).toBe(200);
    await holding(0);
    const bigField = new FormData();
    bigField.set('x_format', 'json');
    bigField.set('mesg', JSON.stringify({ dest: 'test', param1: 'm'.repeat(BUDGET) }));
    const refusal = await post(bigField);
    expect([refusal.status, refusal.headers.get('retry-after'), await refusal.text()]).toEqual([503, '5', DOORS[0]!.busy]);
    await holding(0);
  });

  it('shares one budget among the web and the front doors', async () => {
    const [web, cloudq, rqms] = DOORS as [Door, Door, Door];
    const held = await holdTwo(web, cloudq);
    const refusal = await refused(rqms);
    expect([status(refusal), replyBody(refusal)]).toEqual([503, rqms.busy]);
    expect(status(await held[0]!.finish())).toBe(web.ok);
    expect(status(await held[1]!.finish())).toBe(cloudq.ok);
    await holding(0);
  });

  it('refuses a body over its own limit with 413 whatever the budget', async () => {
    const [web, cloudq] = DOORS as [Door, Door];
    const held = await holdTwo(web, web);
    // Cloudq's limit is 10 MiB: a body declared over it is refused without being held.
    const reply = await send(cloudq, Buffer.alloc(10 * 1024 * 1024 + 1, 'x'));
    expect([status(reply), replyBody(reply)]).toEqual([413, '{"status":"error","message":"job too large"}']);
    for (const r of held) expect(status(await r.finish())).toBe(web.ok);
    await holding(0);
  });
  it('holds what a body sent, not what it declares: bodies that trickle in do not shut out the others', async () => {
    // Three requests on each door each declare a body as large as the budget and send a few bytes, then a byte more.
    const trickles: Sent[] = [];
    for (const door of DOORS) {
      for (let i = 0; i < 3; i++) trickles.push(request(port(door), door.head(), door.body(BUDGET)));
    }
    for (const r of trickles) void r.upTo(100);
    for (const r of trickles) void r.upTo(101);
    // (Before the fix each request held what it declared: the first one took the whole budget.)
    const sent = 101 * trickles.length;
    await waitFor(async () => (await metric('rq_web_request_body_bytes')) >= sent, 10_000, `the web to hold ${sent} bytes`);
    for (const door of DOORS) expect(status(await send(door, door.body(50_000)))).toBe(door.ok);
    await holding(sent);
    for (const r of trickles) r.gone();
    await holding(0);
  });

  it('web: refuses a compressed body with 415 and a reason, without reading it, and holds nothing for it', async () => {
    const web = DOORS[0]!;
    const refusal = '415 - A compressed request body (Content-Encoding other than identity) is not read: send it uncompressed';
    const form = zlib.gzipSync(web.body(BODY));
    for (const type of ['application/x-www-form-urlencoded', 'application/json']) {
      const head = `POST /q/test/new_message HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${type}\r\nContent-Encoding: gzip`;
      const whole = await request(port(web), head, form).finish();
      expect([status(whole), replyBody(whole)]).toEqual([415, refusal]);
      // The refusal comes before the rest of the body, and the body holds nothing meanwhile.
      const started = request(port(web), head, form);
      const early = await started.upTo(1);
      expect([status(early), replyBody(early)]).toEqual([415, refusal]);
      await holding(0);
      expect(status(await send(web, web.body(BUDGET - 60_000)))).toBe(web.ok);
      started.gone();
    }
  });
});
