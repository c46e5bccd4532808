/**
 * The server end of a queue's (or rq-mgr's) RPC socket: one request per connection,
 * framed as wire.ts says, answered by the handler; and the socket made so that only its
 * owner may connect.
 */
import net from 'node:net';
import { coerceError } from '../domain/errors.js';
import { ALLOCATED, PacketBuffer, encodePacket, socketAddress, splitRequest } from './wire.js';

/** What a command may know of its connection: a long wait (a blocking lease) outlives the idle limit, and ends when the client goes. */
export interface RpcConnection {
  /** Allow this long without traffic before the connection is dropped (default 60 s). */
  setIdleTimeout(ms: number): void;
  /**
   * Called once if the client closes the connection, or shuts down its sending side, before
   * the reply is sent (the two look alike from here: it may be gone). The reply is sent all
   * the same, for a client that only half-closed.
   */
  onClose(listener: () => void): void;
  /** Send `["allocated", id]` ahead of the reply; resolves once it is written (or the client is gone). */
  announce(id: string): Promise<void>;
}

/**
 * Serve one request per connection; `handle` returns the reply payload (JSON text). A
 * client may shut down its sending side once its request is written (`printf … | socat -`
 * does): the connection stays open for the reply, and the server closes it after.
 */
export function createRpcServer(handle: (command: string, argument: string, conn: RpcConnection) => Promise<string>): net.Server {
  return net.createServer({ allowHalfOpen: true }, (sock) => {
    const received = new PacketBuffer();
    let handled = false;
    const onTimeout = (): void => void sock.destroy();
    sock.setTimeout(60_000, onTimeout);
    let ended = false;
    const endListeners: Array<() => void> = [];
    const clientEnded = (): void => {
      if (ended) return;
      ended = true;
      for (const listener of endListeners.splice(0)) listener();
    };
    const conn: RpcConnection = {
      setIdleTimeout: (ms) => void sock.setTimeout(Math.min(ms, 2 ** 31 - 1), onTimeout),
      onClose: (listener) => (ended ? listener() : void endListeners.push(listener)),
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
    sock.on('end', () => {
      tryHandle(true);
      clientEnded();
    });
    sock.on('close', clientEnded);
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
