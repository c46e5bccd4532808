/**
 * The pull front doors' listeners, in the web process (web-main.ts): one server per
 * protocol enabled in `config.json` `protocols` (main-config.ts), on its own `addr:port`.
 * Each protocol module checks its own keys and builds its server; all of them reach the
 * queues through one PullClient and keep no queue state, so a restart of the web
 * process loses no lease and no job. They also share one view of lmstfy's namespaces
 * (door-access.ts): the lmstfy door's token table, read once here, is the one every
 * door asks which queues are closed to it.
 */
import type net from 'node:net';
import type { MainConfig, ProtocolName, ProtocolSection } from '../domain/main-config.js';
import type { Logger } from '../lib/logger.js';
import type { RootLayout } from '../store/layout.js';
import type { ProtocolFactory } from './context.js';
import { Namespaces } from './door-access.js';
import { PullClient } from './pull-client.js';

/** Each door's module is loaded only when its section is there: a web process without doors does without them. */
const FACTORIES: Partial<Record<ProtocolName, () => Promise<ProtocolFactory>>> = {
  lmstfy: async () => (await import('./lmstfy.js')).lmstfyServer,
  cloudq: async () => (await import('./cloudq.js')).cloudqServer,
  rqms: async () => (await import('./rqms.js')).rqmsServer,
  workq: async () => (await import('./workq/server.js')).workqServer,
};

/**
 * Build every enabled protocol's server (a bad section throws before anything listens),
 * then listen. Resolves when all listen; rejects with the first that cannot.
 */
export async function startProtocolServers(root: RootLayout, config: MainConfig, log: Logger): Promise<net.Server[]> {
  const client = new PullClient(root, log);
  const namespaces = Namespaces.open(root, config);
  const built: Array<{ name: ProtocolName; section: ProtocolSection; server: net.Server }> = [];
  for (const [name, section] of Object.entries(config.protocols) as Array<[ProtocolName, ProtocolSection]>) {
    const factory = await FACTORIES[name]?.();
    if (!factory) {
      log.warn({ protocol: name }, `the ${name} front door is not built yet; its section is ignored`);
      continue;
    }
    built.push({ name, section, server: factory({ root, client, log: log.child({ protocol: name }), main: config, section, namespaces }) });
  }
  await Promise.all(
    built.map(
      ({ name, section, server }) =>
        new Promise<void>((resolve, reject) => {
          server.once('error', (e) => reject(new Error(`${name} cannot listen on ${section.addr}:${section.port}: ${e.message}`)));
          server.listen(section.port, section.addr, () => {
            log.info({ protocol: name, addr: section.addr, port: section.port }, `${name} listening`);
            resolve();
          });
        }),
    ),
  );
  return built.map((b) => b.server);
}
