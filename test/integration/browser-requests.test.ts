/**
 * Requests from browsers, on every listener of the web process (the web and each front
 * door), over real sockets: a browser's request (one with an Origin, a Sec-Fetch-* or a
 * Cookie header) must call the listener by one of the install's names, so DNS rebinding
 * gets a 421 while curl and RQ's own clients may use any Host; the HTTP doors refuse
 * cross-site requests of any method (403), each in its own reply format, and neither
 * make nor hand out a job for them; the Workq port closes a connection that talks HTTP,
 * so a form POST cannot smuggle commands into it; and a request head that never ends is
 * closed within its listener's header timeout, on the web and on every HTTP door.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedRoot, waitFor } from '../helpers/install.js';
import { startProtocols, type ProtocolName } from '../helpers/protocols.js';
import { rawRequest } from '../helpers/web.js';
import { NOT_FOUND, WorkqClient } from '../helpers/workq-client.js';

const TOKEN = 'a-token-for-browser-tests';
const REBIND = 'rebind.attacker.example';
/** Cloudq listens on an address of its own, which only it answers to. */
const CLOUDQ_ADDR = '127.0.0.2';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** One request over node:http, which sends the Host header as given. */
function call(port: number, method: string, pathname: string, headers: Record<string, string> = {}, body?: string, addr = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: addr, port, method, path: pathname, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const json = (a: Answer): unknown => JSON.parse(a.text);

describe('browser requests on every listener', () => {
  const shared = sharedRoot(async (t) => {
    t.addQueue({ name: 'test', script: 'done.sh' });
    return startProtocols(
      t,
      { cloudq: { addr: CLOUDQ_ADDR }, rqms: {}, lmstfy: { tokens: { web: [TOKEN] } }, workq: {} },
      { config: { host: 'rqhost.test', allowed_hosts: ['rq.example.com', 'Other.Example'] } },
    );
  });
  const t = shared.t;
  const web = (): number => shared.started().web.port;
  const port = (name: ProtocolName): number => shared.started().port(name);
  const rebind = (p: number): Record<string, string> => ({ host: `${REBIND}:${p}`, origin: `http://${REBIND}:${p}`, 'sec-fetch-site': 'same-origin' });
  const crossSite = { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' };

  describe('the web', () => {
    it('refuses DNS rebinding: a browser calling it by another site’s name gets 421, and no queue is made or run', async () => {
      const marker = path.join(t().root, 'pwned');
      const form = new URLSearchParams({
        'queue[name]': 'rebound',
        'queue[script]': './scripts/done.sh',
        'queue[num_workers]': '1',
        'queue[exec_prefix]': `touch ${marker};`,
      }).toString();
      const formType = { 'content-type': 'application/x-www-form-urlencoded' };
      const made = await call(web(), 'POST', '/new_queue', { ...rebind(web()), ...formType }, form);
      expect(made.status, made.text).toBe(421);
      expect(made.text).toBe(`421 - Misdirected request: this server is not called "${REBIND}" (add the name to allowed_hosts in config.json)\n`);
      const mesg = new URLSearchParams({ mesg: JSON.stringify({ dest: 'rebound' }) }).toString();
      expect((await call(web(), 'POST', '/q/rebound/new_message', { ...rebind(web()), ...formType }, mesg)).status).toBe(421);
      expect((await call(web(), 'POST', '/q/test/new_message', { ...rebind(web()), ...formType }, mesg)).status).toBe(421);
      expect(fs.existsSync(t().queueDir('rebound'))).toBe(false);
      expect(fs.existsSync(marker)).toBe(false);
      expect(fs.readdirSync(path.join(t().queueDir('test'), 'que'))).toEqual([]);
    });

    it('answers 421 to any request that a browser marks (Origin, Sec-Fetch-*, Cookie, its User-Agent), GETs included, and serves plain clients under any name', async () => {
      const host = { host: `${REBIND}:${web()}` };
      const marked = [
        { origin: `http://${REBIND}:${web()}` },
        { 'sec-fetch-site': 'same-origin' },
        { 'sec-fetch-dest': 'document', 'sec-fetch-mode': 'navigate' },
        { cookie: 'rack.session=x' },
        // A same-origin GET over plain HTTP: browsers send no Sec-Fetch-* to such a URL, and no Origin.
        { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36' },
        // The same from a Firefox page that set its own User-Agent: it cannot drop the Accept-Language.
        { 'user-agent': 'x', 'accept-language': 'en-US,en;q=0.5' },
      ];
      for (const marks of marked) {
        const res = await call(web(), 'GET', '/q.json', { ...host, ...marks });
        expect(res.status, JSON.stringify(marks)).toBe(421);
        expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
        expect(res.text).toMatch(/^421 - Misdirected request: [^\n]*\n$/);
      }
      expect((await call(web(), 'GET', '/q.json', host)).status).toBe(200);
      // curl, and Node's fetch (Sec-Fetch-Mode alone, as rq's own relay sends it), are not browsers.
      expect((await call(web(), 'GET', '/q.json', { ...host, 'user-agent': 'curl/8.5.0' })).status).toBe(200);
      expect((await call(web(), 'GET', '/q.json', { ...host, 'user-agent': 'node', 'sec-fetch-mode': 'cors', 'accept-language': '*' })).status).toBe(200);
      // HTTP/1.0 without a Host header: fine from a plain client, misdirected from a browser.
      expect(await rawRequest(web(), 'GET /q.json HTTP/1.0\r\n\r\n')).toMatch(/^HTTP\/1\.1 200 /);
      const noHost = await rawRequest(web(), 'GET /q.json HTTP/1.0\r\nCookie: a=b\r\n\r\n');
      expect(noHost).toMatch(/^HTTP\/1\.1 421 /);
      expect(noHost).toContain('421 - Misdirected request: a browser request without a Host header\n');
    });

    it('lets a browser call it localhost, 127.0.0.1, [::1], its host and addr, and the allowed_hosts names, in any case', async () => {
      for (const name of ['localhost', 'LocalHost', '127.0.0.1', '[::1]', 'rqhost.test', 'rq.example.com', 'RQ.Example.COM', 'other.example']) {
        for (const hostHeader of [`${name}:${web()}`, name]) {
          const res = await call(web(), 'GET', '/q.json', { host: hostHeader, 'sec-fetch-site': 'same-origin', cookie: 'a=b' });
          expect(res.status, hostHeader).toBe(200);
        }
      }
      const sameOrigin = { host: `rq.example.com:${web()}`, origin: `http://rq.example.com:${web()}`, 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' };
      const sent = await call(web(), 'POST', '/q/test/new_message', sameOrigin, new URLSearchParams({ mesg: JSON.stringify({ dest: 'test' }), x_format: 'json' }).toString());
      expect(sent.status, sent.text).toBe(200);
      expect(sent.text).toMatch(/^\["ok",/);
    });

    it('takes RQ’s raw HTTP/1.0 upload sent with another host name and curl’s User-Agent, and refuses the same from a browser', async () => {
      const prep = await call(web(), 'POST', '/q/test/new_message', { 'content-type': 'application/x-www-form-urlencoded' }, new URLSearchParams({ mesg: JSON.stringify({ dest: 'test', _method: 'prep' }) }).toString());
      const id = (JSON.parse(prep.text) as [string, string])[1].split('/').at(-1)!;
      const upload = (extra: string): Promise<string> => {
        const body =
          '--MIMEBOUNDARY\r\nContent-Disposition: form-data; name="x_format"\r\n\r\njson\r\n' +
          '--MIMEBOUNDARY\r\nContent-Disposition: form-data; name="filedata"; filename="mime.txt"\r\nContent-Type: text/plain\r\n\r\nhello\n\r\n' +
          '--MIMEBOUNDARY--\r\n';
        return rawRequest(
          web(),
          `POST /q/test/${id}/attach/new HTTP/1.0\r\nUser-Agent: curl/7.19.7 (x86_64-redhat-linux-gnu)\r\nHost: dru-brserv.btrll.com:3333\r\nAccept: */*\r\n${extra}` +
            `Content-Length: ${Buffer.byteLength(body)}\r\nContent-Type: multipart/form-data; boundary=MIMEBOUNDARY\r\n\r\n${body}`,
        );
      };
      expect(await upload('Cookie: rack.session=x\r\n')).toMatch(/^HTTP\/1\.1 421 /);
      const reply = await upload('');
      expect(reply).toMatch(/^HTTP\/1\.1 200 /);
      expect(reply).toContain('\r\n\r\n["ok","b1946ac92492d2347c6235b4d2611184-Attached successfully"]');
    });
  });

  describe('the HTTP front doors', () => {
    const formType = { 'content-type': 'application/x-www-form-urlencoded' };
    const textType = { 'content-type': 'text/plain;charset=UTF-8' };

    it('answer a misdirected browser request 421 in their own format, and let plain clients call them by any name', async () => {
      const cq = port('cloudq');
      const refusedCq = await call(cq, 'POST', '/cq-rebound', { ...rebind(cq), ...formType }, 'job[klass]=X&job[args][]=a', CLOUDQ_ADDR);
      expect(refusedCq.status).toBe(421);
      expect(json(refusedCq)).toEqual({ status: 'error', message: `Misdirected request: this server is not called "${REBIND}" (add the name to allowed_hosts in config.json)` });
      expect(fs.existsSync(t().queueDir('cq-rebound'))).toBe(false);
      const plainCq = await call(cq, 'POST', '/cq-plain', { host: `${REBIND}:${cq}`, ...formType }, 'job[klass]=X&job[args][]=a', CLOUDQ_ADDR);
      expect(json(plainCq)).toEqual({ status: 'success' });

      const rq = port('rqms');
      const fetchRq = await call(rq, 'GET', '/rq-rebound', { host: `${REBIND}:${rq}`, cookie: 'a=b' });
      expect(fetchRq.status).toBe(421);
      expect(fetchRq.headers['content-type']).toBe('application/json');
      expect(json(fetchRq)).toMatchObject({ error: true, message: expect.stringMatching(/^Misdirected request: /) });
      const postRq = await call(rq, 'POST', '/rq-rebound?id=a', { ...rebind(rq), ...textType }, '{"n":1}');
      expect(postRq.status).toBe(421);
      expect(postRq.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(postRq.text).toBe(`Misdirected request: this server is not called "${REBIND}" (add the name to allowed_hosts in config.json)`);
      expect(fs.existsSync(t().queueDir('rq-rebound'))).toBe(false);
      expect((await call(rq, 'POST', '/rq-plain?id=a', { host: `${REBIND}:${rq}` }, '{"n":1}')).status).toBe(201);

      const lm = port('lmstfy');
      const publishLm = await call(lm, 'PUT', '/api/web/lm-rebound', { ...rebind(lm), 'x-token': TOKEN }, 'job');
      expect(publishLm.status).toBe(421);
      expect(json(publishLm)).toMatchObject({ error: expect.stringMatching(/^Misdirected request: /) });
      expect(publishLm.headers['x-request-id']).toMatch(/^[0-9A-Z]{26}$/);
      expect(fs.existsSync(t().queueDir('web.lm-rebound'))).toBe(false);
      expect((await call(lm, 'PUT', '/api/web/lm-plain', { host: `${REBIND}:${lm}`, 'x-token': TOKEN }, 'job')).status).toBe(201);
    });

    it('refuse a browser GET that carries no mark of its origin (an image over plain HTTP to a name of this host): 403, nothing reserved or locked', async () => {
      // Over plain HTTP to a name other than localhost a browser sends no Sec-Fetch-*, and an <img> GET no Origin.
      const img = { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0', 'accept-language': 'en-US,en;q=0.5', accept: 'image/avif,image/webp,*/*' };
      const cq = port('cloudq');
      const job = JSON.stringify({ job: { klass: 'X', args: ['img'] } });
      expect(json(await call(cq, 'POST', '/cq-img', { 'content-type': 'application/json' }, job, CLOUDQ_ADDR))).toEqual({ status: 'success' });
      const reserve = await call(cq, 'GET', '/cq-img', { ...img, host: `rqhost.test:${cq}` }, undefined, CLOUDQ_ADDR);
      expect(reserve.status).toBe(403);
      expect(json(reserve)).toEqual({ status: 'error', message: 'Forbidden: a request from another site is refused' });
      expect(json(await call(cq, 'GET', '/cq-img', {}, undefined, CLOUDQ_ADDR))).toMatchObject({ job: { klass: 'X', args: ['img'] } });

      const rq = port('rqms');
      expect((await call(rq, 'POST', '/rq-img?id=a', {}, '{"n":1}')).status).toBe(201);
      const lock = await call(rq, 'GET', '/rq-img?count=1&time=600', { ...img, host: `rqhost.test:${rq}` });
      expect(lock.status).toBe(403);
      const fetched = json(await call(rq, 'GET', '/rq-img?count=1')) as { items: Array<{ value: unknown }> };
      expect(fetched.items.map((i) => i.value)).toEqual([{ n: 1 }]);
    });

    it('know their own addr: a browser may call Cloudq by 127.0.0.2, but not RQMS, which listens elsewhere', async () => {
      const cq = port('cloudq');
      const hello = await call(cq, 'GET', '/', { host: `${CLOUDQ_ADDR}:${cq}`, 'sec-fetch-site': 'none' }, undefined, CLOUDQ_ADDR);
      expect(json(hello)).toEqual({ status: 'success', message: 'cloudq' });
      const rq = port('rqms');
      expect((await call(rq, 'GET', '/rq-any', { host: `${CLOUDQ_ADDR}:${rq}`, 'sec-fetch-site': 'none' })).status).toBe(421);
      expect((await call(rq, 'GET', '/rq-any', { host: `localhost:${rq}`, 'sec-fetch-site': 'none' })).status).toBe(200);
    });

    it('Cloudq refuses cross-site form and text/plain POSTs (403), and a cross-site GET reserves nothing', async () => {
      const cq = port('cloudq');
      const own = { host: `${CLOUDQ_ADDR}:${cq}` };
      const job = JSON.stringify({ job: { klass: 'X', args: ['a'] } });
      for (const [marks, type, body] of [
        [crossSite, formType, 'job[klass]=X&job[args][]=a'],
        [{ origin: 'http://evil.example' }, textType, job],
        [{ 'sec-fetch-site': 'cross-site' }, textType, job],
        [{ 'sec-fetch-site': 'same-site', origin: 'http://127.0.0.2:8080' }, textType, job],
        [{ origin: 'null' }, formType, 'job[klass]=X&job[args][]=a'],
      ] as const) {
        const res = await call(cq, 'POST', '/cq-cross', { ...own, ...marks, ...type }, body, CLOUDQ_ADDR);
        expect(res.status, JSON.stringify(marks)).toBe(403);
        expect(json(res)).toEqual({ status: 'error', message: 'Forbidden: a request from another site is refused' });
      }
      expect(fs.existsSync(t().queueDir('cq-cross'))).toBe(false);

      const published = await call(cq, 'POST', '/cq-held', { 'content-type': 'application/json' }, job, CLOUDQ_ADDR);
      expect(json(published)).toEqual({ status: 'success' });
      // An <img src> on another site's page: a GET with Sec-Fetch-Site: cross-site and no Origin.
      const img = await call(cq, 'GET', '/cq-held', { ...own, 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' }, undefined, CLOUDQ_ADDR);
      expect(img.status).toBe(403);
      // The same-origin browser and the plain client are served; the job was still there to reserve.
      const sameOrigin = { ...own, origin: `http://${CLOUDQ_ADDR}:${cq}`, 'sec-fetch-site': 'same-origin' };
      const reserved = await call(cq, 'GET', '/cq-held', sameOrigin, undefined, CLOUDQ_ADDR);
      expect(json(reserved)).toMatchObject({ job: { klass: 'X', args: ['a'] } });
    });

    it('RQMS refuses cross-site POSTs (403, its own style), and a cross-site GET locks nothing', async () => {
      const rq = port('rqms');
      for (const [type, body] of [
        [textType, '{"n":1}'],
        [formType, 'n=1'],
      ] as const) {
        const res = await call(rq, 'POST', '/rq-cross?id=a', { ...crossSite, ...type }, body);
        expect(res.status).toBe(403);
        expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
        expect(res.text).toBe('Forbidden: a request from another site is refused');
      }
      expect(fs.existsSync(t().queueDir('rq-cross'))).toBe(false);

      expect((await call(rq, 'POST', '/rq-held?id=a', {}, '{"n":1}')).status).toBe(201);
      const img = await call(rq, 'GET', '/rq-held?count=1&time=600', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' });
      expect(img.status).toBe(403);
      expect(json(img)).toEqual({ error: true, message: 'Forbidden: a request from another site is refused' });
      const fetched = json(await call(rq, 'GET', '/rq-held?count=1')) as { items: Array<{ value: unknown }> };
      expect(fetched.items.map((i) => i.value)).toEqual([{ n: 1 }]);
    });

    it('lmstfy refuses a cross-site consume (403), which leases nothing', async () => {
      const lm = port('lmstfy');
      expect((await call(lm, 'PUT', '/api/web/lm-held', { 'x-token': TOKEN }, 'job')).status).toBe(201);
      const img = await call(lm, 'GET', `/api/web/lm-held?token=${TOKEN}&ttr=600`, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' });
      expect(img.status).toBe(403);
      expect(json(img)).toEqual({ error: 'Forbidden: a request from another site is refused' });
      const consumed = await call(lm, 'GET', `/api/web/lm-held?token=${TOKEN}`);
      expect(consumed.status).toBe(200);
      expect(json(consumed)).toMatchObject({ msg: 'new job', data: Buffer.from('job').toString('base64') });
    });
  });

  describe('the Workq port', () => {
    const ID = '6ba7b810-9dad-41d1-80b4-00c04fd430c4';
    const add = `add ${ID} smuggled 1000 60000 1\r\nx\r\n`;

    it('closes a connection that starts with an HTTP request line, so a form POST smuggles no command; the log names the peer', async () => {
      const c = await WorkqClient.connect(port('workq'));
      const body = `x=\r\n${add}`;
      c.send(`POST / HTTP/1.1\r\nHost: 127.0.0.1:${port('workq')}\r\nOrigin: http://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      expect(await c.closed()).toBe('');
      const check = await WorkqClient.connect(port('workq'));
      expect((await check.inspect('job', ID)).text).toBe(NOT_FOUND);
      check.destroy();
      expect(fs.existsSync(t().queueDir('smuggled'))).toBe(false);
      const log = path.join(t().root, 'log/rq.log');
      await waitFor(() => fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('workq client sent HTTP'), 10_000, 'the warning in the log');
      const line = fs.readFileSync(log, 'utf8').split('\n').find((l) => l.includes('workq client sent HTTP'))!;
      expect(line).toMatch(/"peer":"127\.0\.0\.1:\d+"/);
      expect(line).toMatch(/"level":(40|"warn")/);
    });

    it('closes on a Host header line, and on an HTTP line after Workq commands, whose replies go first', async () => {
      const host = await WorkqClient.connect(port('workq'));
      host.send(`Host: 127.0.0.1\r\n${add}`);
      expect(await host.closed()).toBe('');
      const later = await WorkqClient.connect(port('workq'));
      later.send(`inspect job ${ID}\r\nGET / HTTP/1.0\r\n${add}`);
      expect(await later.closed()).toBe(NOT_FOUND);
      const check = await WorkqClient.connect(port('workq'));
      expect((await check.inspect('job', ID)).text).toBe(NOT_FOUND);
      check.destroy();
    });
  });

  it('closes request heads that never end within the header timeout, on the web and on every HTTP door', async () => {
    /** Each listener, its address and header timeout. */
    const listeners = [
      { name: 'web', port: web(), addr: '127.0.0.1', timeoutMs: 5_000 },
      { name: 'rqms', port: port('rqms'), addr: '127.0.0.1', timeoutMs: 5_000 },
      { name: 'cloudq', port: port('cloudq'), addr: CLOUDQ_ADDR, timeoutMs: 10_000 },
      { name: 'lmstfy', port: port('lmstfy'), addr: '127.0.0.1', timeoutMs: 10_000 },
    ];
    /** `n` connections that send half a request head; resolves with the ms until the server closed each. */
    const slowHeads = (p: number, addr: string, n: number): Promise<number[]> =>
      Promise.all(
        Array.from(
          { length: n },
          () =>
            new Promise<number>((resolve, reject) => {
              const sock = net.connect(p, addr);
              let opened = 0;
              sock.on('connect', () => {
                opened = Date.now();
                sock.write('GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow');
              });
              sock.on('data', () => undefined);
              sock.on('error', reject);
              sock.on('close', () => resolve(Date.now() - opened));
            }),
        ),
      );
    // Two waves 15 s apart: Node's default check every 30 s would hold one of them for far longer.
    const wave = (): Array<Promise<number[]>> => listeners.map((l) => slowHeads(l.port, l.addr, 30));
    const first = wave();
    await new Promise((r) => setTimeout(r, 15_000));
    const second = wave();
    const waves = [await Promise.all(first), await Promise.all(second)];
    for (const [w, closedAfter] of waves.entries()) {
      for (const [i, l] of listeners.entries()) {
        const slowest = Math.max(...closedAfter[i]!);
        expect(slowest, `${l.name}, wave ${w + 1}`).toBeLessThan(l.timeoutMs + 5_000);
      }
    }
  }, 90_000);
});
