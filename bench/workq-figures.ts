/**
 * Figure 6 of `npm run bench` (bench.ts runs it): the Workq front door over real TCP. An
 * install under rq-mgr serves Workq on 127.0.0.1; every command is a real line from this
 * process, every add, lease and complete a durable commit in the queue process.
 *
 *  (a) add+lease+complete per second: 16 connections each loop `add`, `lease` and
 *      `complete` until the jobs are done; against the same run's bare 16-way durable
 *      create loop (a job is three durable commits: create, que → run, run → done);
 *  (b) `run` round trip: one worker connection waits in `lease` and completes each job;
 *      from sending `run` to its result. p50 and p99 over one job at a time, against a
 *      bare round trip of the same door (`inspect queue` of a name that does not exist).
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import { rootLayout } from '../src/store/layout.js';
import { freePort, latencyRow, rqMgr, type PullBenchHelpers } from './pull-figures.js';

const CONNECTIONS = 16;

/** One connection: send a command, read its one reply (Workq's shapes: a line, or a line, a header line and a block). */
class Conn {
  private readonly sock: net.Socket;
  private buf = Buffer.alloc(0);
  private wake: (() => void) | undefined;

  private constructor(sock: net.Socket) {
    this.sock = sock;
    sock.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake?.();
    });
  }

  static open(port: number): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1', () => resolve(new Conn(sock)));
      sock.once('error', reject);
    });
  }

  private async line(): Promise<string> {
    for (;;) {
      const at = this.buf.indexOf('\r\n');
      if (at >= 0) {
        const text = this.buf.subarray(0, at).toString('latin1');
        this.buf = this.buf.subarray(at + 2);
        return text;
      }
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  private async bytes(n: number): Promise<void> {
    while (this.buf.length < n + 2) await new Promise<void>((r) => (this.wake = r));
    this.buf = this.buf.subarray(n + 2);
  }

  /** Send, and read a reply: `+OK 1` is followed by a header line whose last token is a block size. */
  async ask(command: string): Promise<string> {
    this.sock.write(command);
    const first = await this.line();
    if (first !== '+OK 1') return first;
    const header = await this.line();
    await this.bytes(Number(header.split(' ').at(-1)));
    return header;
  }

  close(): void {
    this.sock.destroy();
  }
}

export async function figureWorkq(h: PullBenchHelpers): Promise<void> {
  const jobs = h.quick ? 300 : 3_000;
  const samples = h.quick ? 30 : 300;
  h.say(`\n[6] Workq front door over TCP: ${jobs} jobs added, leased and completed over ${CONNECTIONS} connections; ${samples} run round trips`);
  const root = h.makeInstall('workq');
  const [webPort, port] = [await freePort(), await freePort()];
  const configFile = rootLayout(root).mainConfig;
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(configFile, JSON.stringify({ ...config, port: String(webPort), protocols: { workq: { port } } }));
  rqMgr(root, 'start');
  const conns: Conn[] = [];
  try {
    for (let i = 0; i < 200 && conns.length === 0; i++) {
      try {
        conns.push(await Conn.open(port));
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    while (conns.length < CONNECTIONS) conns.push(await Conn.open(port));
    const expect = (got: string, want: string, what: string): void => {
      if (!got.startsWith(want)) throw new Error(`${what}: ${got}`);
    };
    // (a) add + lease + complete; the queue is made before the clock starts.
    expect(await conns[0]!.ask(`add ${randomUUID()} wq 60000 600000 1\r\nx\r\n`), '+OK', 'add');
    let left = jobs;
    let done = 0;
    const t0 = performance.now();
    await Promise.all(
      conns.map(async (c) => {
        while (left > 0) {
          left--;
          expect(await c.ask(`add ${randomUUID()} wq 60000 600000 4\r\njob!\r\n`), '+OK', 'add');
          const leased = await c.ask('lease wq 1000\r\n');
          const id = leased.split(' ')[0]!;
          expect(await c.ask(`complete ${id} 2\r\nok\r\n`), '+OK', 'complete');
          done++;
        }
      }),
    );
    const rate = done / ((performance.now() - t0) / 1000);
    const bare = await h.bareAsyncRate();
    h.show(`bare durable creates, ${CONNECTIONS}-way`, `${Math.round(bare)}/s`);
    h.show(`add+lease+complete, ${CONNECTIONS} connections`, `${Math.round(rate)} jobs/s`);
    h.addRow({
      figure: `6a. add+lease+complete, ${CONNECTIONS} conns`,
      measured: `${Math.round(rate)} jobs/s (${(rate / bare).toFixed(2)}x limit)`,
      limit: `bare creates, ${CONNECTIONS}-way: ${Math.round(bare)}/s`,
      goal: '>= 0.3x limit',
      verdict: rate >= 0.3 * bare ? 'PASS' : 'MISS',
    });
    // (b) run round trip
    const [client, worker] = [conns[0]!, conns[1]!];
    let stopping = false;
    const serve = (async (): Promise<void> => {
      while (!stopping) {
        const leased = await worker.ask('lease rt 10000\r\n');
        if (leased !== '-TIMEOUT') expect(await worker.ask(`complete ${leased.split(' ')[0]!} 2\r\nok\r\n`), '+OK', 'complete');
      }
    })();
    const lat: number[] = [];
    const bareLat: number[] = [];
    for (let i = 0; i < samples + 10; i++) {
      const sent = performance.now();
      const result = await client.ask(`run ${randomUUID()} rt 10000 10000 4\r\nping\r\n`);
      if (!/^\S+ 1 2$/.test(result)) throw new Error(`run: ${result}`);
      const got = performance.now();
      const b0 = performance.now();
      expect(await client.ask('inspect queue no-such-queue\r\n'), '-NOT-FOUND', 'inspect');
      if (i >= 10) {
        lat.push(got - sent);
        bareLat.push(performance.now() - b0);
      }
    }
    stopping = true;
    expect(await client.ask(`add ${randomUUID()} rt 60000 600000 4\r\nstop\r\n`), '+OK', 'add');
    await serve;
    latencyRow(h, { figure: '6b. run round trip', what: 'run round trip', bare: 'bare Workq round trip' }, lat, bareLat);
  } finally {
    for (const c of conns) c.close();
    rqMgr(root, 'stop');
  }
}
