/**
 * Test support for the pull front doors: start rq-mgr (and so the web process, which
 * serves them) with the given `protocols` sections, each on a free port of 127.0.0.1,
 * and wait until every one of them accepts connections; `sharedProtocols` does it once
 * for the tests of a describe (sharedRoot's life cycle).
 */
import net from 'node:net';
import { freePort, sharedRoot, waitFor, type TestRoot } from './install.js';
import { startWeb, type Web } from './web.js';

export type ProtocolName = 'lmstfy' | 'cloudq' | 'rqms' | 'workq';

export type ProtocolSections = Partial<Record<ProtocolName, Record<string, unknown>>>;

export interface Protocols {
  web: Web;
  /** The port a started protocol listens on. */
  port(name: ProtocolName): number;
  /** `http://127.0.0.1:<port>` of a started protocol (no trailing slash). */
  base(name: ProtocolName): string;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** `sections`: each protocol's keys besides `port` (which is chosen here); `env` is added to rq-mgr's environment. */
export async function startProtocols(t: TestRoot, sections: ProtocolSections, env: Record<string, string> = {}): Promise<Protocols> {
  const port: Partial<Record<ProtocolName, number>> = {};
  const config: Record<string, unknown> = {};
  for (const [name, section] of Object.entries(sections) as Array<[ProtocolName, Record<string, unknown>]>) {
    port[name] = await freePort();
    config[name] = { ...section, port: port[name] };
  }
  const web = await startWeb(t, { protocols: config }, env);
  for (const [name, p] of Object.entries(port)) await waitFor(() => accepts(p), 10_000, `${name} to listen on ${p}`);
  const portOf = (name: ProtocolName): number => {
    const p = port[name];
    if (p === undefined) throw new Error(`protocol ${name} was not started`);
    return p;
  };
  return { web, port: portOf, base: (name) => `http://127.0.0.1:${portOf(name)}` };
}

/**
 * One install for the tests of the calling describe, serving `sections` (startProtocols)
 * from before the first test to after the last; the root is kept, its path printed,
 * when one failed or the start did.
 */
export function sharedProtocols(sections: ProtocolSections): { t: () => TestRoot; port(name: ProtocolName): number; base(name: ProtocolName): string } {
  const shared = sharedRoot((t) => startProtocols(t, sections));
  return { t: shared.t, port: (name) => shared.started().port(name), base: (name) => shared.started().base(name) };
}
