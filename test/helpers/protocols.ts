/**
 * Test support for the pull front doors: start rq-mgr (and so the web process, which
 * serves them) with the given `protocols` sections, each on a free port of its `addr`
 * (127.0.0.1 unless the section names another), and wait until every one of them accepts
 * connections; `sharedProtocols` does it once for the tests of a describe (sharedRoot's
 * life cycle).
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
  /** `http://<addr>:<port>` of a started protocol (no trailing slash). */
  base(name: ProtocolName): string;
}

function accepts(port: number, addr: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, addr);
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

/** Extra for startProtocols: `config`, other keys of config.json; `env`, added to rq-mgr's environment. */
export interface ProtocolsOptions {
  config?: Record<string, unknown>;
  env?: Record<string, string>;
}

/** `sections`: each protocol's keys besides `port` (which is chosen here). */
export async function startProtocols(t: TestRoot, sections: ProtocolSections, opts: ProtocolsOptions = {}): Promise<Protocols> {
  const port: Partial<Record<ProtocolName, number>> = {};
  const addr = (name: ProtocolName): string => (sections[name]?.['addr'] as string | undefined) ?? '127.0.0.1';
  const config: Record<string, unknown> = {};
  for (const [name, section] of Object.entries(sections) as Array<[ProtocolName, Record<string, unknown>]>) {
    port[name] = await freePort();
    config[name] = { ...section, port: port[name] };
  }
  const web = await startWeb(t, { ...opts.config, protocols: config }, opts.env);
  for (const [name, p] of Object.entries(port) as Array<[ProtocolName, number]>) await waitFor(() => accepts(p, addr(name)), 10_000, `${name} to listen on ${p}`);
  const portOf = (name: ProtocolName): number => {
    const p = port[name];
    if (p === undefined) throw new Error(`protocol ${name} was not started`);
    return p;
  };
  return { web, port: portOf, base: (name) => `http://${addr(name)}:${portOf(name)}` };
}

/**
 * One install for the tests of the calling describe, serving `sections` (startProtocols)
 * from before the first test to after the last; the root is kept, its path printed,
 * when one failed or the start did.
 */
export function sharedProtocols(
  sections: ProtocolSections,
  opts: ProtocolsOptions = {},
): { t: () => TestRoot; web: () => Web; port(name: ProtocolName): number; base(name: ProtocolName): string } {
  const shared = sharedRoot((t) => startProtocols(t, sections, opts));
  return { t: shared.t, web: () => shared.started().web, port: (name) => shared.started().port(name), base: (name) => shared.started().base(name) };
}
