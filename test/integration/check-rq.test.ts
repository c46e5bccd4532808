/**
 * bin/check_rq (docs/operations.md) run for real against a tiny HTTP server started here on
 * 127.0.0.1, port 0, that serves `/q.txt` and the queue texts (`/q/<name>.txt`). It covers the
 * requests the probe makes (the double slash), its parsing, each verdict with its exact
 * line and Nagios exit status, the connection and HTTP failures, --dump and -h.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runBin, type CliResult } from '../helpers/ops-tools.js';

interface Reply {
  status?: number;
  body: string;
}

/** An rq web server stand-in: a fixed table of path → reply; records every request path. */
class FakeRq {
  readonly requested: string[] = [];
  routes = new Map<string, Reply>();
  /** Paths that never answer (to test the deadline). */
  hang = new Set<string>();
  private readonly server = http.createServer((req, res) => {
    const url = req.url ?? '';
    this.requested.push(url);
    if (this.hang.has(url)) return;
    const reply = this.routes.get(url);
    res.writeHead(reply?.status ?? (reply ? 200 : 404), { 'content-type': 'text/plain;charset=utf-8' });
    res.end(reply?.body ?? '404 - Not Found');
  });

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  /** Serve these queues: `/q.txt` lists them sorted, with no trailing newline, as the web does. */
  queues(texts: Record<string, string>): void {
    const names = Object.keys(texts).sort();
    this.routes.set('/q.txt', { body: names.map((n) => `/q/${n}.txt`).join('\n') });
    for (const n of names) this.routes.set(`//q/${n}.txt`, { body: texts[n] ?? '' });
  }
}

/** A queue text exactly as the web serves it. */
function queueText(c: { status?: string; prep?: number; que?: number; run?: number; done?: number; err?: number; relayed?: number } = {}): string {
  return `status: ${c.status ?? 'UP'}\nuptime: 12\n\nprep: ${c.prep ?? 0}\nque: ${c.que ?? 0}\nrun: ${c.run ?? 0}\n\ndone: ${c.done ?? 0}\nerr: ${c.err ?? 0}\nrelayed: ${c.relayed ?? 0}\n`;
}

let rq: FakeRq;
let port: number;
beforeEach(async () => {
  rq = new FakeRq();
  port = await rq.listen();
});
afterEach(async () => {
  await rq.close();
});

function checkRq(...args: string[]): Promise<CliResult> {
  return runBin('bin/check_rq', ['-p', String(port), ...args], { RQ_PORT: undefined });
}

describe('verdicts', () => {
  it('OK when every queue is UP, without errors, with a small backlog', async () => {
    rq.queues({ test: queueText({ que: 9, done: 2999 }), relay: queueText({ relayed: 5 }) });
    expect(await checkRq()).toEqual({ code: 0, stdout: 'OK: all queue tests normal\n', stderr: '' });
  });

  it('GETs /q.txt, then "/" + each line: //q/<name>.txt', async () => {
    rq.queues({ webhook: queueText(), cleaner: queueText(), relay: queueText() });
    await checkRq();
    expect(rq.requested).toEqual(['/q.txt', '//q/cleaner.txt', '//q/relay.txt', '//q/webhook.txt']);
  });

  it('OK with no queues at all', async () => {
    rq.routes.set('/q.txt', { body: '' });
    expect(await checkRq()).toMatchObject({ code: 0, stdout: 'OK: all queue tests normal\n' });
  });

  it('WARNING when prep+que+run reaches the backlog warning', async () => {
    rq.queues({ a: queueText({ prep: 2, que: 5, run: 3 }), b: queueText() });
    expect(await checkRq()).toMatchObject({ code: 1, stdout: 'WARNING:  a: prep=>2 run=>3 que=>5,\n' });
  });

  it('CRITICAL when the backlog reaches the critical threshold', async () => {
    rq.queues({ a: queueText({ que: 20 }) });
    expect(await checkRq()).toMatchObject({ code: 2, stdout: 'CRITICAL:  a: prep=>0 run=>0 que=>20,\n' });
  });

  it('CRITICAL when a queue has a message in err', async () => {
    rq.queues({ a: queueText(), relay: queueText({ err: 1 }) });
    expect(await checkRq()).toMatchObject({ code: 2, stdout: 'CRITICAL:  relay: errors => 1,\n' });
  });

  it.each(['PAUSE', 'DOWN'])('CRITICAL when a queue\'s status is %s', async (status) => {
    // A DOWN queue's whole text is "status: DOWN\n".
    rq.queues({ a: status === 'DOWN' ? 'status: DOWN\n' : queueText({ status }) });
    expect(await checkRq()).toMatchObject({ code: 2, stdout: `CRITICAL:  a: status ${status},\n` });
  });

  it('WARNING, then CRITICAL, on many done or relayed messages', async () => {
    rq.queues({ a: queueText({ done: 3000 }), b: queueText({ relayed: 3499 }) });
    expect(await checkRq()).toMatchObject({ code: 1, stdout: 'WARNING:  a: done => 3000, b: relayed => 3499,\n' });
    rq.queues({ a: queueText({ done: 3500 }) });
    expect(await checkRq()).toMatchObject({ code: 2, stdout: 'CRITICAL:  a: done => 3500,\n' });
  });

  it('the worst verdict wins, every problem queue is listed, nothing is escalated', async () => {
    rq.queues({ a: queueText({ que: 12 }), b: queueText({ status: 'PAUSE', err: 2 }), c: queueText() });
    expect(await checkRq()).toMatchObject({ code: 2, stdout: 'CRITICAL:  a: prep=>0 run=>0 que=>12, b: status PAUSE errors => 2,\n' });
    rq.queues({ a: queueText({ que: 12 }), b: queueText({ done: 3100 }) });
    expect(await checkRq()).toMatchObject({ code: 1, stdout: 'WARNING:  a: prep=>0 run=>0 que=>12, b: done => 3100,\n' });
  });

  it('-t / --thresh sets the thresholds', async () => {
    rq.queues({ a: queueText({ que: 3, done: 50 }) });
    expect(await checkRq('-t', '3:5:0:0:100:200')).toMatchObject({ code: 1, stdout: 'WARNING:  a: prep=>0 run=>0 que=>3,\n' });
    expect(await checkRq('--thresh=1:3:0:0:40:100')).toMatchObject({ code: 2, stdout: 'CRITICAL:  a: prep=>0 run=>0 que=>3 done => 50,\n' });
  });
});

describe('failures', () => {
  it('connection refused: CRITICAL: Could not connect to <server>:<port>, exit 2', async () => {
    await rq.close();
    const r = await runBin('bin/check_rq', ['-s', '127.0.0.1', '--port', String(port)]);
    expect(r).toMatchObject({ code: 2, stdout: `CRITICAL: Could not connect to 127.0.0.1:${port}\n` });
  });

  it('a non-200 /q.txt: CRITICAL: Could not Fetch /q.txt', async () => {
    rq.routes.set('/q.txt', { status: 503, body: 'rq-mgr is down' });
    expect(await checkRq()).toMatchObject({ code: 2, stdout: 'CRITICAL: Could not Fetch /q.txt\n' });
  });

  it('a non-200 queue text: CRITICAL: Could not Fetch //q/<name>.txt', async () => {
    rq.queues({ a: queueText(), b: queueText() });
    rq.routes.set('//q/b.txt', { status: 500, body: 'oops' });
    expect(await checkRq()).toMatchObject({ code: 2, stdout: 'CRITICAL: Could not Fetch //q/b.txt\n' });
  });

  it('a server that never answers: CRITICAL after the deadline', async () => {
    rq.queues({ a: queueText() });
    rq.hang.add('//q/a.txt');
    const r = await checkRq('--timeout', '0.5');
    expect(r).toMatchObject({ code: 2, stdout: `CRITICAL: Timed out after 0.5 s fetching //q/a.txt from 127.0.0.1:${port}\n` });
  });
});

describe('options', () => {
  it('--dump prints each queue and its fields, then the verdict', async () => {
    rq.queues({ a: queueText({ que: 1, done: 42, err: 5 }) });
    const r = await checkRq('--dump');
    expect(r.code).toBe(2);
    expect(r.stdout).toBe(
      [
        'a',
        '\tstatus -> UP',
        '\tuptime -> 12',
        '\tprep -> 0',
        '\tque -> 1',
        '\trun -> 0',
        '\tdone -> 42',
        '\terr -> 5',
        '\trelayed -> 0',
        'CRITICAL:  a: errors => 5,',
        '',
      ].join('\n'),
    );
    expect((await checkRq('-d')).stdout).toBe(r.stdout);
  });

  it.each(['-h', '--help'])('%s prints HELP is on the way and exits 0 without a request', async (flag) => {
    const r = await checkRq(flag);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe('HELP is on the way');
    expect(rq.requested).toEqual([]);
  });

  it('the port comes from $RQ_PORT when -p is not given', async () => {
    rq.queues({ a: queueText() });
    const r = await runBin('bin/check_rq', ['-s', '127.0.0.1'], { RQ_PORT: String(port) });
    expect(r).toMatchObject({ code: 0, stdout: 'OK: all queue tests normal\n' });
  });

  it('-sHOST -pPORT and --server=HOST --port=PORT work too', async () => {
    rq.queues({ a: queueText() });
    expect(await runBin('bin/check_rq', ['-s127.0.0.1', `-p${port}`])).toMatchObject({ code: 0 });
    expect(await runBin('bin/check_rq', ['--server=127.0.0.1', `--port=${port}`])).toMatchObject({ code: 0 });
  });

  it.each([
    [['-x'], 'unknown option -x'],
    [['--thresh', '1:2:3'], '--thresh must be six whole numbers a:b:c:d:e:f, got "1:2:3"'],
    [['-p', 'http'], 'the port must be a number from 1 to 65535, got "http"'],
    [['-s'], 'option -s needs a value'],
  ])('%j: UNKNOWN, exit 3', async (args, message) => {
    const r = await runBin('bin/check_rq', args);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe(`UNKNOWN: check_rq: ${message}\n`);
    expect(r.stderr).toContain('Usage: check_rq');
  });
});
