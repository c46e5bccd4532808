/**
 * The web process: `node dist/src/web/web-main.js`, started by rq-mgr. It listens on the
 * config's `addr:port` and exits when rq-mgr goes away (parent-link.ts: whenever that
 * happens, even while it starts) or on TERM. It takes the root's web lock
 * (process-lock.ts) before it opens any port: while an earlier web process of the root
 * still holds them, it waits for that one to exit, and says so.
 * At start it warns when RQ's Ruby router rules are there without rq's JSON ones, since
 * only the JSON file puts the web in router mode. It also serves the pull front doors
 * that `config.json` `protocols` enables (src/protocols/servers.ts), each on its own port;
 * one that cannot listen is fatal, as the web's own port is.
 */
import { explain } from '../domain/errors.js';
import { BODY_BUDGET_WARNING } from '../lib/body-budget.js';
import { createHttpServer } from '../lib/http-listener.js';
import { installRoot } from '../lib/install-root.js';
import { createLogger } from '../lib/logger.js';
import { followParent } from '../lib/parent-link.js';
import { holderName, takeLock } from '../lib/process-lock.js';
import { rubyRulesWarning } from '../router/rules.js';
import { readMainConfig } from '../store/config-files.js';
import { rootLayout } from '../store/layout.js';
import { createApp } from './app.js';

const root = rootLayout(installRoot());
process.chdir(root.root);
process.title = '[rq-web]';
const log = createLogger({ component: 'web' });

function exit(code: number): never {
  log.flush();
  process.exit(code);
}
if (!followParent(() => exit(0))) exit(0);

let config;
try {
  config = readMainConfig(root);
} catch (e) {
  log.fatal({ err: explain(e) }, 'Bad config file. Exiting');
  exit(1);
}
if (BODY_BUDGET_WARNING) log.warn(BODY_BUDGET_WARNING);
const rubyRules = rubyRulesWarning(root.configDir);
if (rubyRules) log.warn(rubyRules);
const port = Number(config.port);
let waitedFor: string | undefined;
await takeLock(root, 'web', {
  waitWhile: () => true,
  onWait: (holder) => {
    waitedFor = holderName(holder);
    log.warn({ holder: holder.pid }, `waiting for the previous web process (${waitedFor}) to exit before opening its ports`);
  },
}).catch((e: unknown) => {
  log.fatal({ err: explain(e) }, 'cannot take the lock of the web ports. Exiting');
  exit(1);
});
if (waitedFor) log.info(`the previous web process (${waitedFor}) has exited; opening its ports`);
// The front doors' modules load only when config.json enables one: without, the web starts sooner.
const doorsStarted = Object.keys(config.protocols).length === 0 ? Promise.resolve([]) : import('../protocols/servers.js').then((m) => m.startProtocolServers(root, config, log));
const protocols = doorsStarted.catch((e: unknown) => {
  log.fatal({ err: explain(e) }, 'a protocol front door cannot start. Exiting');
  exit(1);
});
// As RQ's server: the head within 5 s, the whole request within 120 s.
const server = createHttpServer(createApp({ root, config, log }), { headersTimeoutMs: 5_000, requestTimeoutMs: 120_000 });
server.listen(port, config.addr, () => {
  log.info({ addr: config.addr, port }, `web listening on http://${config.addr}:${port}${config.relativeRoot}`);
  void protocols.then(() => process.send?.({ type: 'listening' }));
});
server.on('error', (e) => {
  log.fatal({ err: e.message }, 'web cannot listen');
  exit(1);
});
process.on('SIGTERM', () => {
  void protocols.then((servers) => {
    for (const s of servers) s.close();
  });
  server.close(() => exit(0));
  // A live tail keeps its connection open; the browser reconnects (Last-Event-ID) to the next web process.
  server.closeAllConnections();
});
