/**
 * Test support for fault tests between two rq hosts: a real HTTP proxy on 127.0.0.1 that
 * stands in front of a remote rq's web and strikes once (the test's `strike`, e.g. a
 * kill -9 of a remote process) at one point of the first request that matches:
 * - `after-reply`: once the reply has been passed on to the client;
 * - `{ bodyBytes: n }`: once n bytes of the request body have been passed on (an upload
 *   cut in the middle);
 * - `instead-of-reply`: the remote served the request, but its reply is dropped with the
 *   connection, so the client never learns the outcome.
 * While a strike is under way new requests wait, so the client's next step always meets
 * its effect. A request the remote does not take (it is down) has its connection
 * dropped, as a dead host's would be. A strike that throws is recorded (`seen`), the
 * connection it struck at is dropped (unless its reply is already out), and later
 * requests pass as usual.
 *
 * The proxy is the remote's public address: the remote's full ids in reply bodies are
 * rewritten to name the proxy (as a remote whose `host`/`port` named a proxy in front of
 * it would write them), so a client's later requests to those ids come through here too.
 * Bodies are held whole for that; relay traffic replies are small.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Transform, pipeline, type TransformCallback } from 'node:stream';

export interface Fault {
  /** The request to strike at; `path` is the request target, e.g. `/q/test/new_message`. */
  matches(method: string, path: string): boolean;
  when: 'after-reply' | 'instead-of-reply' | { bodyBytes: number };
  strike(): Promise<void>;
}

export interface FaultProxy {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  origin: string;
  /**
   * What happened, in order: each request as `<METHOD> <path> <status> <start of the
   * reply body>` or `<METHOD> <path> dropped`, and the strike as `strike` once it is
   * over (or `strike failed: <error>`).
   */
  readonly seen: readonly string[];
  close(): Promise<void>;
}

/** The strike's entry in `seen`, when it went through. */
export const STRUCK = 'strike';

const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'content-length'];

function withoutHopByHop(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = { ...headers };
  for (const h of HOP_BY_HOP) delete out[h];
  return out;
}

/** Start the proxy in front of the web on 127.0.0.1:`upstreamPort`. */
export async function startFaultProxy(upstreamPort: number, fault: Fault): Promise<FaultProxy> {
  let isArmed = true;
  /** Resolves when no strike is under way; never rejects. */
  let gate: Promise<void> = Promise.resolve();
  const seen: string[] = [];
  /** Strike once `after` has happened; resolves to whether the strike went through. */
  const strike = (after: Promise<unknown> = Promise.resolve()): Promise<boolean> => {
    const done = after.then(() => fault.strike()).then(
      () => {
        seen.push(STRUCK);
        return true;
      },
      (e: unknown) => {
        seen.push(`strike failed: ${e instanceof Error ? e.message : String(e)}`);
        return false;
      },
    );
    gate = done.then(() => undefined);
    return done;
  };

  const server = http.createServer((req, res) => {
    void (async () => {
      await gate;
      const method = req.method ?? 'GET';
      const target = req.url ?? '/';
      const isTarget = isArmed && fault.matches(method, target);
      if (isTarget) isArmed = false;
      const upstream = http.request({ host: '127.0.0.1', port: upstreamPort, method, path: target, headers: { ...req.headers, connection: 'close' }, agent: false });
      const drop = (): void => {
        if (res.destroyed) return;
        seen.push(`${method} ${target} dropped`);
        upstream.destroy();
        req.destroy();
        res.destroy();
      };
      upstream.on('error', drop);
      upstream.on('response', (reply) => {
        const chunks: Buffer[] = [];
        reply.on('data', (c: Buffer) => chunks.push(c));
        reply.on('error', drop);
        reply.on('end', () => {
          if (isTarget && fault.when === 'instead-of-reply') {
            void strike().then(drop);
            return;
          }
          const body = Buffer.from(
            Buffer.concat(chunks).toString('latin1').replaceAll(`http://127.0.0.1:${upstreamPort}/`, `${origin}/`),
            'latin1',
          );
          const status = reply.statusCode ?? 502;
          seen.push(`${method} ${target} ${status} ${body.subarray(0, 60).toString('latin1')}`);
          // The reply has reached the client by the strike, so a failed one has nothing to drop.
          if (isTarget && fault.when === 'after-reply') void strike(new Promise((r) => res.once('finish', r)));
          res.writeHead(status, { ...withoutHopByHop(reply.headers), 'content-length': body.length });
          res.end(body);
        });
      });
      const when = fault.when;
      let passed = 0;
      let isMidBodyArmed = isTarget && typeof when === 'object';
      const counter = new Transform({
        transform(chunk: Buffer, _enc, done: TransformCallback) {
          passed += chunk.length;
          if (isMidBodyArmed && typeof when === 'object' && passed >= when.bodyBytes) {
            isMidBodyArmed = false;
            // The bytes up to here reach the remote before it is struck.
            this.push(chunk);
            void strike(new Promise((r) => setImmediate(r))).then((isStruck) => done(isStruck ? null : new Error('the strike failed')));
            return;
          }
          done(null, chunk);
        },
      });
      pipeline(req, counter, upstream, (e) => {
        if (e) drop();
      });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    seen,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
