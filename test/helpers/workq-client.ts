/**
 * Test support for the Workq front door (docs/doors/workq.md): a TCP client on 127.0.0.1 that
 * builds the exact command bytes of each command and reads exactly one reply by the grammar the
 * command calls for (`+OK`, a lease, a result, inspect records, or one of the error
 * lines), keeping the reply's bytes so a test can compare them byte for byte. A raw mode
 * sends any bytes and reads N reply lines, and tells when the server closed the
 * connection, for the framing rules. `workqClients` opens clients for the tests of
 * a describe and closes them after each test.
 */
import net from 'node:net';
import { afterEach } from 'vitest';
import { waitFor } from './install.js';

const CRLF = Buffer.from('\r\n');

/** The grammar a reply is read by: the one of the command that was sent. */
export type ReplyKind = 'ok' | 'lease' | 'result' | 'inspect';

export interface LeasedJob {
  id: string;
  name: string;
  ttr: number;
  payload: Buffer;
}

export interface JobResult {
  id: string;
  success: boolean;
  result: Buffer;
}

/** One inspect record: `<label> <key-count>` and its key lines (values as latin1 text, raw bytes up to the line end). */
export interface InspectRecord {
  label: string;
  keys: string[];
  values: Record<string, string>;
}

export type Reply =
  | { type: 'ok'; text: string }
  | { type: 'lease'; text: string; job: LeasedJob }
  | { type: 'result'; text: string; result: JobResult }
  | { type: 'records'; text: string; records: InspectRecord[] }
  | { type: 'client-error'; text: string; message: string }
  | { type: 'server-error'; text: string; message: string }
  | { type: 'timeout'; text: string }
  | { type: 'not-found'; text: string };

/** Reply texts, as they are on the wire. */
export const OK = '+OK\r\n';
export const TIMEOUT = '-TIMEOUT\r\n';
export const NOT_FOUND = '-NOT-FOUND\r\n';
export const clientError = (text: string): string => `-CLIENT-ERROR ${text}\r\n`;

/** A reply that does not follow Workq's reply grammar for the command sent. */
class WorkqProtocolError extends Error {}

export class WorkqClient {
  private readonly sock: net.Socket;
  private buf: Buffer = Buffer.alloc(0);
  private ended = false;
  private wake: (() => void) | undefined;
  /** The bytes of the reply being read. */
  private taken: Buffer[] = [];

  private constructor(sock: net.Socket) {
    this.sock = sock;
    sock.on('data', (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      this.poke();
    });
    // A reset or a write to a closed connection is the server having closed it.
    sock.on('error', () => undefined);
    sock.on('close', () => {
      this.ended = true;
      this.poke();
    });
  }

  static connect(port: number): Promise<WorkqClient> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1');
      sock.once('error', reject);
      sock.once('connect', () => {
        sock.off('error', reject);
        resolve(new WorkqClient(sock));
      });
    });
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Wait until `ready()` holds; throws once the server closed the connection without it. */
  private async until(ready: () => boolean, what: string): Promise<void> {
    while (!ready()) {
      if (this.ended) {
        throw new WorkqProtocolError(`connection closed while reading ${what}; unread bytes: ${JSON.stringify(this.buf.toString('latin1'))}`);
      }
      await new Promise<void>((r) => (this.wake = r));
    }
  }

  private take(n: number): Buffer {
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    this.taken.push(out);
    return out;
  }

  /** One line without its CR LF. */
  private async line(what: string): Promise<string> {
    await this.until(() => this.buf.includes(CRLF), what);
    const end = this.buf.indexOf(CRLF);
    const text = this.take(end).toString('latin1');
    this.take(2);
    return text;
  }

  /** `n` raw bytes and the CR LF after them. */
  private async block(n: number, what: string): Promise<Buffer> {
    await this.until(() => this.buf.length >= n + 2, what);
    const data = Buffer.from(this.take(n));
    const end = this.take(2);
    if (!end.equals(CRLF)) throw new WorkqProtocolError(`${what} of ${n} bytes is not followed by CR LF but ${JSON.stringify(end.toString('latin1'))}`);
    return data;
  }

  /** Send bytes as they are (strings as UTF-8). */
  send(bytes: string | Buffer): void {
    this.sock.write(bytes);
  }

  /** Read exactly one reply by the grammar of `kind`. */
  async reply(kind: ReplyKind): Promise<Reply> {
    this.taken = [];
    const first = await this.line(`the first line of a ${kind} reply`);
    const text = (): string => Buffer.concat(this.taken).toString('latin1');
    if (first.startsWith('-')) {
      if (first === '-TIMEOUT') return { type: 'timeout', text: text() };
      if (first === '-NOT-FOUND') return { type: 'not-found', text: text() };
      const m = /^-(CLIENT|SERVER)-ERROR (.*)$/s.exec(first);
      if (!m) throw new WorkqProtocolError(`not a Workq error line: ${JSON.stringify(first)}`);
      return { type: m[1] === 'CLIENT' ? 'client-error' : 'server-error', text: text(), message: m[2]! };
    }
    if (kind === 'ok') {
      if (first !== '+OK') throw new WorkqProtocolError(`expected +OK, got ${JSON.stringify(first)}`);
      return { type: 'ok', text: text() };
    }
    if (kind === 'lease' || kind === 'result') {
      if (first !== '+OK 1') throw new WorkqProtocolError(`expected +OK 1 for a ${kind} reply, got ${JSON.stringify(first)}`);
      const head = await this.line(`the ${kind} line`);
      if (kind === 'lease') {
        const m = /^(\S+) (\S+) (\d+) (\d+)$/.exec(head);
        if (!m) throw new WorkqProtocolError(`not a lease line: ${JSON.stringify(head)}`);
        const payload = await this.block(Number(m[4]), 'the payload');
        return { type: 'lease', text: text(), job: { id: m[1]!, name: m[2]!, ttr: Number(m[3]), payload } };
      }
      const m = /^(\S+) ([01]) (\d+)$/.exec(head);
      if (!m) throw new WorkqProtocolError(`not a result line: ${JSON.stringify(head)}`);
      const result = await this.block(Number(m[3]), 'the result');
      return { type: 'result', text: text(), result: { id: m[1]!, success: m[2] === '1', result } };
    }
    const m = /^\+OK (\d+)$/.exec(first);
    if (!m) throw new WorkqProtocolError(`expected +OK <n> for an inspect reply, got ${JSON.stringify(first)}`);
    const records: InspectRecord[] = [];
    for (let i = 0; i < Number(m[1]); i++) {
      const head = await this.line('a record head');
      const h = /^(\S+) (\d+)$/.exec(head);
      if (!h) throw new WorkqProtocolError(`not a record head: ${JSON.stringify(head)}`);
      const record: InspectRecord = { label: h[1]!, keys: [], values: {} };
      for (let k = 0; k < Number(h[2]); k++) {
        const kv = await this.line('a key line');
        const space = kv.indexOf(' ');
        const key = space < 0 ? kv : kv.slice(0, space);
        record.keys.push(key);
        record.values[key] = space < 0 ? '' : kv.slice(space + 1);
      }
      records.push(record);
    }
    return { type: 'records', text: text(), records };
  }

  /** Send bytes and read the reply by `kind`. */
  request(kind: ReplyKind, bytes: string | Buffer): Promise<Reply> {
    this.send(bytes);
    return this.reply(kind);
  }

  /** Raw mode: the next `n` lines exactly as sent, CR LF included. */
  async lines(n: number): Promise<string> {
    this.taken = [];
    for (let i = 0; i < n; i++) await this.line(`raw line ${i + 1} of ${n}`);
    return Buffer.concat(this.taken).toString('latin1');
  }

  /** Resolves with the unread bytes once the server has closed the connection; throws if it is still open after `timeoutMs`. */
  async closed(timeoutMs = 5_000): Promise<string> {
    await waitFor(() => this.ended, timeoutMs, 'the server to close the connection');
    return this.buf.toString('latin1');
  }

  /** Half-close: send EOF, keep reading. */
  end(): void {
    this.sock.end();
  }

  /** Close the connection (both ways). */
  destroy(): void {
    this.sock.destroy();
  }

  // The commands: the exact bytes, and the reply read by the command's grammar.

  add(id: string, name: string, ttr: number | string, ttl: number | string, payload: string | Buffer = '', flags = ''): Promise<Reply> {
    return this.request('ok', withBlock(`add ${id} ${name} ${ttr} ${ttl}`, payload, flags));
  }

  schedule(id: string, name: string, ttr: number | string, ttl: number | string, time: string, payload: string | Buffer = '', flags = ''): Promise<Reply> {
    return this.request('ok', withBlock(`schedule ${id} ${name} ${ttr} ${ttl} ${time}`, payload, flags));
  }

  run(id: string, name: string, ttr: number | string, wait: number | string, payload: string | Buffer = '', flags = ''): Promise<Reply> {
    return this.request('result', withBlock(`run ${id} ${name} ${ttr} ${wait}`, payload, flags));
  }

  lease(names: string[], wait: number | string): Promise<Reply> {
    return this.request('lease', `lease ${names.join(' ')} ${wait}\r\n`);
  }

  complete(id: string, result: string | Buffer = ''): Promise<Reply> {
    return this.request('ok', withBlock(`complete ${id}`, result));
  }

  fail(id: string, result: string | Buffer = ''): Promise<Reply> {
    return this.request('ok', withBlock(`fail ${id}`, result));
  }

  delete(id: string): Promise<Reply> {
    return this.request('ok', `delete ${id}\r\n`);
  }

  result(id: string, wait: number | string): Promise<Reply> {
    return this.request('result', `result ${id} ${wait}\r\n`);
  }

  inspect(...args: Array<string | number>): Promise<Reply> {
    return this.request('inspect', `inspect ${args.join(' ')}\r\n`);
  }
}

/** `<line> <size>[ <flags>]\r\n<block>\r\n`: the size is the block's length in bytes. */
export function withBlock(line: string, block: string | Buffer, flags = ''): Buffer {
  const data = typeof block === 'string' ? Buffer.from(block) : block;
  return Buffer.concat([Buffer.from(`${line} ${data.length}${flags === '' ? '' : ` ${flags}`}\r\n`), data, CRLF]);
}

/**
 * Clients for the tests of the calling describe: `open()` connects to the port `port()`
 * gives; every client opened during a test is closed after it.
 */
export function workqClients(port: () => number): () => Promise<WorkqClient> {
  const open: WorkqClient[] = [];
  afterEach(() => {
    for (const c of open.splice(0)) c.destroy();
  });
  return async () => {
    const c = await WorkqClient.connect(port());
    open.push(c);
    return c;
  };
}
