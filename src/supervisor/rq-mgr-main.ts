/**
 * The rq-mgr process: `node dist/src/supervisor/rq-mgr-main.js [--foreground]`.
 * In the foreground (`bin/rq-mgr run`, `npm start`) every log line goes to stdout;
 * daemonised (`bin/rq-mgr start`) they go to `log/rq.log`, reopened on SIGUSR1 for
 * logrotate. TERM or INT stops everything cleanly; HUP reloads (spec/rq.md §4.2).
 */
import path from 'node:path';
import { pino } from 'pino';
import { coerceError, explain } from '../domain/errors.js';
import { installRoot } from '../lib/install-root.js';
import { rootLayout } from '../store/layout.js';
import { loadSupervisorSettings } from './settings.js';
import { Supervisor } from './supervisor.js';

const root = rootLayout(installRoot());
process.chdir(root.root);
process.title = '[rq-mgr]';
const foreground = process.argv.includes('--foreground');
const dest = foreground
  ? pino.destination({ dest: 1, sync: false })
  : pino.destination({ dest: path.join(root.root, 'log', 'rq.log'), mkdir: true, sync: false });
const log = pino({ base: { pid: process.pid, component: 'rq-mgr' } }, dest);

function exit(code: number): never {
  dest.flushSync();
  process.exit(code);
}

let settings;
try {
  settings = loadSupervisorSettings(root);
} catch (e) {
  // RQ's exact line, then what was wrong (the cause names the key or the JSON error).
  log.fatal(explain(e));
  if (!foreground) process.stderr.write(`${explain(e)}\n`);
  exit(1);
}

const supervisor = new Supervisor({ root, log, writeLine: (line) => dest.write(`${line}\n`), env: settings.env });
const stop = (): void => {
  void supervisor.shutdown().then(() => exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('SIGHUP', () => {
  log.info('SIGHUP: reloading queues');
  supervisor.reload();
});
process.on('SIGUSR1', () => dest.reopen());

supervisor
  .start()
  .then(() => {
    if (foreground) {
      const { host, port, relativeRoot } = settings.config;
      process.stderr.write(`rq is running: open http://${host || '127.0.0.1'}:${port}${relativeRoot} (Ctrl-C stops it)\n`);
    }
  })
  .catch((e: unknown) => {
    log.fatal({ err: coerceError(e).message }, 'rq-mgr could not start');
    exit(1);
  });
