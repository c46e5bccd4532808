/**
 * RQ's RPC framing over Unix stream sockets, shared by both ends (the server in server.ts,
 * the client in client/rpc.ts).
 *
 * A packet is `rq1 ` + the payload's byte length as 8 zero-padded digits + ` ` + the
 * payload. A request payload is `<command> <argument>`; a reply payload is JSON text.
 * One request and one reply per connection. A bad header drops the connection.
 *
 * Beyond RQ, for the commands that create a message: a client that asks for it (an
 * argument with `"_announce": true`) first gets the packet `["allocated", <id>]`, sent
 * once the id is allocated and before the message is committed, then the reply. So a
 * client whose reply is lost knows whether the request got as far as a message, and
 * which one to ask for.
 *
 * A Unix socket address holds a path of at most 107 bytes, and Node cuts a longer one
 * short without a word (binding, then, a socket of another name, or failing with a
 * misleading EADDRINUSE). An install root deep in the filesystem has longer socket paths:
 * both ends then reach the socket through its directory, opened, as
 * `/proc/self/fd/<fd>/<name>`, which works from any cwd.
 */
import fs from 'node:fs';
import path from 'node:path';

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
export class PacketBuffer {
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

/** The first packet a client that asked for it gets from a command that creates a message. */
export const ALLOCATED = 'allocated';

/** Linux's longest Unix socket path (sun_path less its NUL). */
const SOCKET_PATH_MAX = 107;

/** A path by which to bind or connect a socket, and what to call once it is no longer used. */
export interface SocketAddress {
  path: string;
  release: () => void;
}

/** `socketPath` itself when it fits in a socket address, else the socket's name in its directory opened (which `release` closes). */
export function socketAddress(socketPath: string): SocketAddress {
  if (Buffer.byteLength(socketPath) <= SOCKET_PATH_MAX) return { path: socketPath, release: () => {} };
  const fd = fs.openSync(path.dirname(socketPath), fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  return { path: `/proc/self/fd/${fd}/${path.basename(socketPath)}`, release: () => fs.closeSync(fd) };
}
