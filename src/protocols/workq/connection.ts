/**
 * One Workq connection: its bytes go to the decoder (decoder.ts), and the requests that
 * come out are answered one at a time, in order, with exactly one reply each. A
 * blocking command holds up its own connection only.
 *
 * What a connection holds in memory is bounded: the bytes it has sent that are not yet
 * answered (decoded commands waiting their turn, the one being answered, and a command
 * still arriving; the bytes of a chunk count until the last command decoded from it is
 * answered). While it has commands to answer, it is not read once those bytes reach
 * CONNECTION_BYTES, or all connections' reach DOOR_BYTES, or MAX_QUEUED commands wait;
 * it is read again as its commands are answered, so a pipelining client still gets every
 * reply, in order. A connection with nothing to answer is always read, so a command of
 * the largest size (1,058,576 bytes) always comes whole. A connection that is not read
 * does not see its client go away until it is read again. The web's `/metrics` shows all
 * connections' bytes (rq_workq_held_bytes).
 */
import type net from 'node:net';
import { answer } from './answer.js';
import { WorkqDecoder, type Decoded } from './decoder.js';
import type { WorkqDoor } from './door.js';
import type { WireOptions } from './requests.js';

/** Decoded commands a connection may have waiting before it stops reading. */
const MAX_QUEUED = 1_000;
/** Bytes a connection may hold (sent, not yet answered) before it stops reading while it has commands to answer. */
const CONNECTION_BYTES = 2 * 1024 * 1024;
/** The same, all connections together: past it, every connection with commands to answer stops reading. */
const DOOR_BYTES = 64 * 1024 * 1024;

/** The bytes all Workq connections of this process hold (see the file comment). */
let heldBytes = 0;

/** What all Workq connections hold now, for the web's `/metrics`. */
export function workqHeldBytes(): number {
  return heldBytes;
}

/** Serve one connection until it closes. */
export function serveConnection(socket: net.Socket, door: WorkqDoor, options: WireOptions): void {
  door.clients++;
  const decoder = new WorkqDecoder(options);
  /** Aborted when the client sent its last byte (or went): waits end, so no job is leased for nobody. */
  const gone = new AbortController();
  /** Decoded items in order; `upTo`: on the last item decoded from a chunk, the bytes received up to its end. */
  const waiting: Array<{ item: Decoded; upTo?: number }> = [];
  /** Bytes received (fed to the decoder), and bytes answered: the difference is what this connection holds. */
  let received = 0;
  let answered = 0;
  let busy = false;
  let ended = false;
  let closed = false;

  /** The bytes up to `upTo` are answered: they are not held any more. */
  const release = (upTo: number): void => {
    if (upTo <= answered) return;
    heldBytes -= upTo - answered;
    answered = upTo;
  };

  /** Read on, or stop reading, by the bounds of the file comment. */
  const flow = (): void => {
    if (ended || closed) return;
    const idle = waiting.length === 0 && !busy;
    if (idle || (waiting.length < MAX_QUEUED && received - answered < CONNECTION_BYTES && heldBytes < DOOR_BYTES)) socket.resume();
    else socket.pause();
  };

  const write = async (reply: Buffer): Promise<void> => {
    // Backpressure: a client that does not read its replies stops being served.
    if (socket.write(reply) || closed) return;
    await new Promise<void>((resolve) => {
      const go = (): void => {
        socket.off('drain', go);
        socket.off('close', go);
        resolve();
      };
      socket.on('drain', go);
      socket.on('close', go);
    });
  };

  const drain = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    while (waiting.length > 0 && !closed) {
      const { item, upTo } = waiting.shift()!;
      flow();
      if ('close' in item) {
        if (item.http) {
          const peer = `${socket.remoteAddress}:${socket.remotePort}`;
          door.log.warn({ peer }, 'workq client sent HTTP (a request line or Host header), possibly a web page attacking this port; connection closed');
        }
        // A framing violation closes the connection; the replies already written go first.
        waiting.length = 0;
        release(received);
        ended = true;
        socket.pause();
        break;
      }
      await write('reply' in item ? item.reply : await answer(door, item.request, gone.signal));
      if (upTo !== undefined) release(upTo);
    }
    busy = false;
    flow();
    if (ended && waiting.length === 0) socket.end();
  };

  socket.on('data', (chunk: Buffer) => {
    if (ended) return;
    received += chunk.length;
    heldBytes += chunk.length;
    const items = decoder.push(chunk);
    const upTo = received - decoder.pending;
    items.forEach((item, i) => waiting.push(i === items.length - 1 ? { item, upTo } : { item }));
    flow();
    void drain();
  });
  // EOF: answer what came whole (blocking ones as polls); a command cut off in the middle is dropped.
  socket.on('end', () => {
    if (decoder.pending > 0) door.log.debug({ bytes: decoder.pending }, 'workq client closed in the middle of a command');
    ended = true;
    gone.abort();
    void drain();
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    door.clients--;
    closed = true;
    release(received);
    gone.abort();
  });
}
