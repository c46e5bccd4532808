/**
 * Test support for the pull front doors: start rq-mgr (and so the web process, which
 * serves them) with the given `protocols` sections, each on a free port of 127.0.0.1,
 * and wait until every one of them accepts connections.
 */
import net from 'node:net';
import { freePort, waitFor, type TestRoot } from './install.js';
import { startWeb, type Web } from './web.js';

export type ProtocolName = 'lmstfy' | 'cloudq' | 'rqms' | 'workq';

export interface Protocols {
  web: Web;
  /** The port each enabled protocol listens on. */
  port: Partial<Record<ProtocolName, number>>;
  /** `http://127.0.0.1:<port>` of a protocol (no trailing slash). */
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

/** `sections`: each protocol's keys besides `port` (which is chosen here). */
export async function startProtocols(t: TestRoot, sections: Partial<Record<ProtocolName, Record<string, unknown>>>): Promise<Protocols> {
  const port: Partial<Record<ProtocolName, number>> = {};
  const config: Record<string, unknown> = {};
  for (const [name, section] of Object.entries(sections) as Array<[ProtocolName, Record<string, unknown>]>) {
    port[name] = await freePort();
    config[name] = { ...section, port: port[name] };
  }
  const web = await startWeb(t, { protocols: config });
  for (const [name, p] of Object.entries(port)) await waitFor(() => accepts(p), 10_000, `${name} to listen on ${p}`);
  return {
    web,
    port,
    base(name) {
      const p = port[name];
      if (p === undefined) throw new Error(`protocol ${name} was not started`);
      return `http://127.0.0.1:${p}`;
    },
  };
}
