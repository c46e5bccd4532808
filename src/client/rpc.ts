/**
 * The client end of RQ's RPC over a Unix socket (framing in rpc/wire.ts): send one
 * request, read the reply, and tell the ways a request can end without one (RpcOutcome),
 * including the id a peer announced before its commit.
 */
import net from 'node:net';
import { RqError, coerceError, errnoCode } from '../domain/errors.js';
import { ALLOCATED, PacketBuffer, encodePacket, socketAddress, type SocketAddress } from '../rpc/wire.js';

/** A reply `["ok", …]`: the one test of success every caller uses. */
export function isOk(reply: unknown): reply is ['ok', unknown] {
  return Array.isArray(reply) && reply[0] === 'ok';
}

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
    // Over the 8-digit length field (under 100 MB): the caller's input is too large.
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
