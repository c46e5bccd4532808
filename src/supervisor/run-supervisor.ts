/**
 * The rq-mgr process, in either of its two shapes: in the foreground (`bin/rq-mgr run`,
 * `npm start`, the systemd unit), every log line on stdout; or as the daemon that
 * `bin/rq-mgr start` spawns (rq-mgr-main.ts), every log line in `log/rq.log`, reopened on
 * SIGUSR1 for logrotate. A log that cannot be written (a full disk) costs lines, counted,
 * never the process (logger.ts). Either way TERM or INT stops everything cleanly and HUP
 * reloads. At start it takes the root's rq-mgr lock (process-lock.ts): a
 * second rq-mgr for the same root logs who holds it and exits. It also makes the files
 * that hold secrets owner-only, saying so in the log (secret-files.ts).
 */
import path from 'node:path';
import { coerceError, explain } from '../domain/errors.js';
import { createLogDestination, createLogger } from '../lib/logger.js';
import { holderName, takeLock } from '../lib/process-lock.js';
import { LIMITS_FILE } from '../protocols/lmstfy-limits.js';
import { TOKENS_FILE } from '../protocols/lmstfy-tokens.js';
import type { RootLayout } from '../store/layout.js';
import { tightenSecretFiles } from '../store/secret-files.js';
import { runningPid } from './pid-file.js';
import { loadSupervisorSettings, type SupervisorSettings } from './settings.js';
import { Supervisor } from './supervisor.js';

/**
 * Become rq-mgr: resolves once the queues answer, the web listens and the socket is open.
 * The process then lives until a signal stops it; it exits by itself (status 1) when the
 * config is bad or the supervisor cannot start.
 */
export async function runSupervisor(root: RootLayout, o: { foreground: boolean }): Promise<void> {
  process.chdir(root.root);
  process.title = '[rq-mgr]';
  // Children's lines come through here too: when it cannot write, they are dropped and
  // counted with rq-mgr's own (logger.ts), and every process keeps serving.
  const bindings = { component: 'rq-mgr' };
  const dest = createLogDestination(o.foreground ? { fd: 1 } : { file: root.logFile }, bindings);
  const log = createLogger(bindings, dest);
  const exit: (code: number) => never = (code) => {
    dest.flushSync();
    process.exit(code);
  };

  let settings: SupervisorSettings;
  try {
    settings = loadSupervisorSettings(root);
  } catch (e) {
    // RQ's exact line, then what was wrong (the cause names the key or the JSON error).
    log.fatal(explain(e));
    exit(1);
  }
  let taken;
  try {
    taken = await takeLock(root, 'rq-mgr');
  } catch (e) {
    log.fatal({ err: coerceError(e).message }, 'rq-mgr could not start');
    exit(1);
  }
  if ('holder' in taken) {
    log.fatal({ holder: taken.holder.pid }, `rq-mgr already runs for this install root (${holderName(taken.holder)}). Exiting`);
    exit(1);
  }
  // An rq-mgr of an older rq holds no lock: its pid file still names it.
  const older = runningPid(root);
  if (older !== undefined && older !== process.pid) {
    log.fatal({ holder: older }, `rq-mgr already runs for this install root (pid ${older}, without a lock: an older rq). Exiting`);
    exit(1);
  }
  // An install made by an older version left its secrets readable by every local user.
  for (const t of tightenSecretFiles([root.mainConfig, path.join(root.configDir, TOKENS_FILE), path.join(root.configDir, LIMITS_FILE)])) {
    const file = path.relative(root.root, t.file);
    if ('error' in t) log.error({ file }, `cannot make ${file} readable by its owner only: ${t.error}`);
    else log.warn({ file, from: octal(t.from), to: octal(t.to) }, `${file} was readable by other users (mode ${octal(t.from)}); its mode is now ${octal(t.to)}`);
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

  try {
    await supervisor.start();
  } catch (e) {
    log.fatal({ err: coerceError(e).message }, 'rq-mgr could not start');
    exit(1);
  }
  if (o.foreground) {
    const { host, port, relativeRoot } = settings.config;
    process.stderr.write(`rq is running: open http://${host || '127.0.0.1'}:${port}${relativeRoot} (Ctrl-C stops it)\n`);
  }
}

/** A mode as `ls` users read it: `0644`. */
function octal(mode: number): string {
  return mode.toString(8).padStart(4, '0');
}
