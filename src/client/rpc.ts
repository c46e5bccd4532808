/**
 * RQ's RPC framing over Unix stream sockets (spec/rq.md §5.1), for both ends.
 *
 * A packet is `rq1 ` + the payload's byte length as 8 zero-padded digits + ` ` + the
 * payload. A request payload is `<command> <argument>`; a reply payload is JSON text.
 * One request and one reply per connection. A bad header drops the connection.
 *
 * Beyond RQ, for the commands that create a message: a client that asks for it (an
 * argument with `"_announce": true`) first gets the packet `["allocated", <id>]`, sent
 * once the id is allocated and before the message is committed, then the reply. So a
 * client whose reply is lost knows whether the request got as far as a message, and
 * which one to ask for (rpcRequest tells the ways a request can end without a reply).
 *
 * A Unix socket address holds a path of at most 107 bytes, and Node cuts a longer one
 * short without a word (binding, then, a socket of another name, or failing with a
 * misleading EADDRINUSE). An install root deep in the filesystem has longer socket paths:
 * both ends then reach the socket through its directory, opened, as
 * `/proc/self/fd/<fd>/<name>`, which works from any cwd.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { RqError, coerceError, errnoCode } from '../domain/errors.js';

const MAGIC = 'rq1 ';
const HEADER_LEN = 13;
/** The length field has 8 digits. */
export const MAX_PAYLOAD = 99_999_999;

/**
 * The packet of the payload made of `parts`, each written as UTF-8 straight into the one
 * buffer: a request of many megabytes is not first copied into a joined string, nor its
 * bytes into a second buffer behind the header.
 */
export function encodePacket(...parts: string[]): Buffer {
  let length = 0;
  for (const part of parts) length += Buffer.byteLength(part, 'utf8');
  if (length > MAX_PAYLOAD) throw new RangeError(`RPC payload of ${length} bytes is over ${MAX_PAYLOAD}`);
  const packet = Buffer.allocUnsafe(HEADER_LEN + length);
  let at = packet.write(`${MAGIC}${String(length).padStart(8, '0')} `, 'latin1');
  for (const part of parts) at += packet.write(part, at, 'utf8');
  return packet;
}

export type PacketResult = { type: 'packet'; payload: string } | { type: 'partial' } | { type: 'bad'; reason: string };

/**
 * The bytes of one packet as they arrive. Once the header is whole, the packet gets one
 * buffer of its announced size and every chunk is copied into it as it comes, so a packet
 * of many megabytes costs that one buffer: the chunks are not kept until the end to be
 * joined (they would then be in memory twice, and the allocator keeps the space of many
 * small chunks long after they are freed). Bytes past the packet's end are kept for
 * `next` (an announcement is followed by the reply).
 */
class PacketBuffer {
  /** The bytes before the header is whole. */
  private head: Buffer = Buffer.alloc(0);
  /** The whole packet's buffer once the header has been read, filled up to `filled`. */
  private packet: Buffer | undefined;
  private filled = 0;
  /** Bytes that came after the end of `packet`. */
  private after: Buffer[] = [];

  push(chunk: Buffer): void {
    if (this.packet) {
      this.fill(chunk);
      return;
    }
    this.head = Buffer.concat([this.head, chunk]);
    if (this.head.length < HEADER_LEN) return;
    const header = this.head.subarray(0, HEADER_LEN).toString('latin1');
    // A bad header is left in `head` for decodePacket to name.
    if (!/^rq1 \d{8} $/.test(header)) return;
    this.packet = Buffer.allocUnsafe(HEADER_LEN + Number(header.slice(4, 12)));
    const head = this.head;
    this.head = Buffer.alloc(0);
    this.fill(head);
  }

  private fill(bytes: Buffer): void {
    const copied = bytes.copy(this.packet!, this.filled);
    this.filled += copied;
    if (copied < bytes.length) this.after.push(bytes.subarray(copied));
  }

  /** Start on the next packet, with the bytes that came after this one. */
  next(): void {
    const after = this.after;
    this.head = Buffer.alloc(0);
    this.packet = undefined;
    this.filled = 0;
    this.after = [];
    for (const bytes of after) this.push(bytes);
  }

  /** Whether the packet decoded last had all the bytes its header announced. */
  whole(): boolean {
    return this.packet !== undefined && this.filled >= this.packet.length;
  }

  /** A packet, `partial` while more bytes are needed, or `bad`. */
  decode(atEof: boolean): PacketResult {
    if (!this.packet) return decodePacket(this.head, atEof);
    if (!atEof && this.filled < this.packet.length) return { type: 'partial' };
    return decodePacket(this.packet.subarray(0, this.filled), atEof);
  }
}

/** Try to read one packet from the bytes received so far. */
export function decodePacket(buf: Buffer, atEof: boolean): PacketResult {
  if (buf.length < HEADER_LEN) {
    if (buf.length >= 4 && buf.subarray(0, 4).toString('latin1') !== MAGIC) return { type: 'bad', reason: 'bad magic' };
    return atEof ? { type: 'bad', reason: 'short header' } : { type: 'partial' };
  }
  const head = buf.subarray(0, HEADER_LEN).toString('latin1');
  if (!head.startsWith(MAGIC) || head[12] !== ' ' || !/^\d{8}$/.test(head.slice(4, 12))) {
    return { type: 'bad', reason: 'bad header' };
  }
  const len = Number(head.slice(4, 12));
  if (buf.length - HEADER_LEN < len && !atEof) return { type: 'partial' };
  return { type: 'packet', payload: buf.subarray(HEADER_LEN, HEADER_LEN + len).toString('utf8') };
}

/** Split a request payload at the first space. */
export function splitRequest(payload: string): { command: string; argument: string } {
  const i = payload.indexOf(' ');
  return i < 0 ? { command: payload, argument: '' } : { command: payload.slice(0, i), argument: payload.slice(i + 1) };
}

/** A reply `["ok", …]`: the one test of success every caller uses. */
export function isOk(reply: unknown): reply is ['ok', unknown] {
  return Array.isArray(reply) && reply[0] === 'ok';
}

/** The first packet a client that asked for it gets from a command that creates a message. */
const ALLOCATED = 'allocated';

/**
 * How one request ended:
 * - `reply`: the peer answered, in JSON;
 * - `unsent`: no connection was made (no socket file, no process listening, a time
 *   limit before the connect): the request reached no process, so nothing was done;
 * - `lost`: the request was sent, and no reply came. `stopped`: the peer closed or reset
 *   the connection without a reply, which a queue process or rq-mgr does only by
 *   ending (also in the middle of its reply); otherwise this side stopped waiting (the
 *   time limit, the caller's abort, a reply that is not a packet of JSON), and the peer
 *   may still be at work. `allocated`: the id
 *   the peer announced before its commit (asked for with `"_announce": true`).
 */
export type RpcOutcome =
  | { type: 'reply'; reply: unknown }
  | { type: 'unsent'; why: string }
  | { type: 'lost'; why: string; stopped: boolean; allocated?: string };

export interface RpcRequestOptions {
  /** The whole exchange's time limit (default 30 s). */
  timeoutMs?: number;
  /** Aborting stops waiting: closing the connection ends a wait in the peer too. */
  signal?: AbortSignal;
  /** The argument asks for an announcement: read `["allocated", <id>]` before the reply. */
  announced?: boolean;
}

/**
 * Send one request and wait for the reply (see RpcOutcome). A request over the framing's
 * size limit is refused up front (an RQ_TOO_LARGE rejection).
 */
export function rpcRequest(socketPath: string, command: string, argument: string, o: RpcRequestOptions = {}): Promise<RpcOutcome> {
  let packet: Buffer;
  try {
    packet = encodePacket(command, ' ', argument);
  } catch (e) {
    // Over the 8-digit length field (spec/rq.md §10.3): the caller's input is too large.
    return Promise.reject(new RqError('RQ_TOO_LARGE', `The ${command} request is too large for the queue socket: ${coerceError(e).message}`));
  }
  const { timeoutMs = 30_000, signal } = o;
  return new Promise((resolve) => {
    const received = new PacketBuffer();
    let connected = false;
    let allocated: string | undefined;
    let settled = false;
    const done = (value: RpcOutcome): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      sock.destroy();
      resolve(value);
    };
    /** No reply: `stopped` when the peer ended the connection. */
    const lost = (why: string, stopped: boolean): void => {
      if (!connected) done({ type: 'unsent', why });
      else done({ type: 'lost', why, stopped, ...(allocated !== undefined ? { allocated } : {}) });
    };
    /** Every whole packet received: an announcement, then the reply. */
    const read = (atEof: boolean): void => {
      for (;;) {
        const r = received.decode(atEof);
        if (r.type === 'partial') return;
        if (r.type === 'bad') {
          lost(atEof ? 'the connection closed without a reply' : `a reply that is not a packet (${r.reason})`, atEof);
          return;
        }
        if (!received.whole()) {
          lost('the connection closed in the middle of the reply', true);
          return;
        }
        const reply = parseReply(r.payload);
        if (reply === undefined) {
          lost('a reply that is not JSON', false);
          return;
        }
        if (o.announced && allocated === undefined && Array.isArray(reply) && reply[0] === ALLOCATED && typeof reply[1] === 'string') {
          allocated = reply[1];
          received.next();
          continue;
        }
        done({ type: 'reply', reply });
        return;
      }
    };
    const onAbort = (): void => lost('the caller stopped waiting', false);
    let address: SocketAddress;
    try {
      address = socketAddress(socketPath);
    } catch (e) {
      // The socket's directory is not there: as a socket that is not there (nothing was sent).
      resolve({ type: 'unsent', why: errnoCode(e) ?? coerceError(e).message });
      return;
    }
    const sock = net.createConnection(address.path);
    sock.once('close', address.release);
    sock.setTimeout(timeoutMs, () => lost(`no reply within ${timeoutMs / 1000} s`, false));
    // The caller gave up (its own client left): closing the connection ends a wait in the queue process too.
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    sock.on('connect', () => {
      connected = true;
      sock.write(packet);
    });
    sock.on('data', (c: Buffer) => {
      received.push(c);
      read(false);
    });
    sock.on('end', () => read(true));
    sock.on('error', (e) => lost(errnoCode(e) ?? e.message, true));
  });
}

/**
 * Send one request and wait for the reply. Resolves to the parsed JSON reply, or
 * `null` when the socket refuses, closes early or answers garbage, as RQ's clients do.
 * A request over the framing's size limit is refused up front (an RQ_TOO_LARGE rejection).
 */
export async function rpcCall(socketPath: string, command: string, argument = '', timeoutMs = 30_000, signal?: AbortSignal): Promise<unknown> {
  const r = await rpcRequest(socketPath, command, argument, { timeoutMs, ...(signal ? { signal } : {}) });
  return r.type === 'reply' ? r.reply : null;
}

/** A reply payload's JSON value; undefined when it is not JSON. */
function parseReply(payload: string): unknown {
  try {
    return JSON.parse(payload);
  } catch {
    return undefined;
  }
}

/** What a command may know of its connection: a long wait (a blocking lease) outlives the idle limit, and ends when the client goes. */
export interface RpcConnection {
  /** Allow this long without traffic before the connection is dropped (default 60 s). */
  setIdleTimeout(ms: number): void;
  /** Called once if the client closes the connection before the reply is sent. */
  onClose(listener: () => void): void;
  /** Send `["allocated", id]` ahead of the reply; resolves once it is written (or the client is gone). */
  announce(id: string): Promise<void>;
}

/** Serve one request per connection; `handle` returns the reply payload (JSON text). */
export function createRpcServer(handle: (command: string, argument: string, conn: RpcConnection) => Promise<string>): net.Server {
  return net.createServer((sock) => {
    const received = new PacketBuffer();
    let handled = false;
    const onTimeout = (): void => void sock.destroy();
    sock.setTimeout(60_000, onTimeout);
    const conn: RpcConnection = {
      setIdleTimeout: (ms) => void sock.setTimeout(Math.min(ms, 2 ** 31 - 1), onTimeout),
      onClose: (listener) => void sock.once('close', listener),
      announce: (id) =>
        new Promise((resolve) => {
          if (sock.destroyed) resolve();
          else sock.write(encodePacket(JSON.stringify([ALLOCATED, id])), () => resolve());
        }),
    };
    const tryHandle = (atEof: boolean): void => {
      if (handled) return;
      const r = received.decode(atEof);
      if (r.type === 'partial') return;
      handled = true;
      if (r.type === 'bad') {
        sock.destroy();
        return;
      }
      const { command, argument } = splitRequest(r.payload);
      const fail = (text: string): void => void sock.end(encodePacket(JSON.stringify(['fail', text])));
      void handle(command, argument, conn).then(
        (reply) => {
          try {
            sock.end(encodePacket(reply));
          } catch (e) {
            // A reply over the 8-digit length field: say so instead of crashing the server.
            fail(coerceError(e).message);
          }
        },
        () => fail('internal error'),
      );
    };
    sock.on('data', (c: Buffer) => {
      received.push(c);
      tryHandle(false);
    });
    sock.on('end', () => tryHandle(true));
    sock.on('error', () => sock.destroy());
  });
}

/**
 * Listen on the Unix socket `socketPath` so that only this user may connect: the socket
 * file is created with mode 0600 whatever the umask (connecting needs write permission
 * on it; under a umask of 002 or 000 the group or everyone would have it). The umask is
 * narrowed only while the socket is bound, which Node does before `listen` returns.
 */
export function listenOwnerOnly(server: net.Server, socketPath: string, onListening: () => void): void {
  const address = socketAddress(socketPath);
  // Node removes the socket file when the server closes, by the path it was bound by: the
  // directory stays open until then.
  server.once('close', address.release);
  const umask = process.umask(0o177);
  try {
    server.listen(address.path, onListening);
  } finally {
    process.umask(umask);
  }
}

/** Linux's longest Unix socket path (sun_path less its NUL). */
const SOCKET_PATH_MAX = 107;

/** A path by which to bind or connect a socket, and what to call once it is no longer used. */
interface SocketAddress {
  path: string;
  release: () => void;
}

/** `socketPath` itself when it fits in a socket address, else the socket's name in its directory opened (which `release` closes). */
function socketAddress(socketPath: string): SocketAddress {
  if (Buffer.byteLength(socketPath) <= SOCKET_PATH_MAX) return { path: socketPath, release: () => {} };
  const fd = fs.openSync(path.dirname(socketPath), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  return { path: `/proc/self/fd/${fd}/${path.basename(socketPath)}`, release: () => fs.closeSync(fd) };
}
