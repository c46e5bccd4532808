/**
 * `bin/rq-install` (docs/operations.md, "Install"): makes an install root ready to run. It owns the
 * first `config/config.json` (RQ's key order, one line, owner-only: mode 0600), the `queues/` directory with its
 * `queue -> queues` symlink, `log/`, and the four built-in queues `relay`, `webhook`,
 * `cleaner` and `rq_router`. It never removes anything: messages already in a queue
 * stay, and an existing queue `config.json` is only replaced with `--force`. Every input is
 * checked before the first write, so a refused call leaves the root as it was.
 *
 * Where rq differs from RQ: the root is `installRoot()` (`RQ_ROOT`, else the package root),
 * the default `host` and `addr` are `127.0.0.1` (RQ used the canonical hostname and
 * `0.0.0.0`), queues live in `queues/` (RQ: `queue.noindex/`), and the built-in queues run
 * `./libexec/<name>_script`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BUILTIN_QUEUES } from '../domain/names.js';
import { normaliseQueueConfig, serialiseQueueConfig } from '../domain/queue-config.js';
import { PACKAGE_ROOT, installRoot } from '../lib/install-root.js';
import { writeFileDurably } from '../store/atomic.js';
import { lstatOrUndefinedSync } from '../store/if-present.js';
import { ensureQueueDirs, queueLayout, rootLayout } from '../store/layout.js';
import { SECRET_FILE_MODE } from '../store/secret-files.js';
import { checkTmpdir } from '../supervisor/settings.js';

/** The options: `--force` and `config/config.json`'s keys. */
interface InstallOptions {
  /** Overwrite an existing `config/config.json` and the built-in queues' configs. */
  force: boolean;
  /** `env`: rq-mgr exports it as `RQ_ENV`; the web shows it. @default "development" */
  env: string;
  /** `host`: the host part of full message ids and of `RQ_HOST`. @default "127.0.0.1" */
  host: string;
  /** `port`: the web port. Given with `--port` it is stored as a string, as RQ did. @default 3333 */
  port: number | string;
  /** `addr`: the address the web listens on. @default "127.0.0.1" (RQ: "0.0.0.0") */
  addr: string;
  /**
   * `tmpdir`: upload temp files; must be on the same filesystem as `queues/`. Stored as the
   * absolute path it names from the cwd (rq-mgr runs from the root). @default "/tmp"
   */
  tmpdir: string;
  /** `allow_new_queue`: queue creation from the web. @default true */
  allowNewQueue: boolean;
}

/** The defaults; with mainConfigText, also what the bench's install roots get. */
export const INSTALL_DEFAULTS = Object.freeze({
  force: false,
  env: 'development',
  host: '127.0.0.1',
  port: 3333,
  addr: '127.0.0.1',
  tmpdir: '/tmp',
  allowNewQueue: true,
} satisfies InstallOptions);

const USAGE = `Usage: rq-install [options]   (each VALUE as "--name VALUE" or "--name=VALUE")
  --force                  overwrite an existing install (messages are kept)
  --env ENV                env, exported to every rq process as RQ_ENV (default development)
  --host HOST              host part of message ids and RQ_HOST (default 127.0.0.1)
  --port PORT              web port, 1..65535 (default 3333)
  --addr ADDR              address the web listens on (default 127.0.0.1)
  --tmpdir DIR             upload temp dir, on the filesystem of queues/ (default /tmp)
  --[no-]allow-new-queue   let the web create queues (default on)
  -h, --help               this text
Installs into $RQ_ROOT, or else the directory rq is in.
`;

type ParsedArgs =
  | { type: 'install'; options: InstallOptions }
  | { type: 'help' }
  | { type: 'error'; message: string; showUsage: boolean };

const VALUE_FLAGS = new Set(['env', 'host', 'port', 'addr', 'tmpdir']);
const SWITCHES = new Set(['force', 'allow-new-queue', 'no-allow-new-queue']);

/** Parse the command line into options; values are checked here, the disk is not touched. */
function parseInstallArgs(argv: readonly string[]): ParsedArgs {
  const o: InstallOptions = { ...INSTALL_DEFAULTS };
  const fail = (message: string, showUsage = false): ParsedArgs => ({ type: 'error', message: `rq-install: ${message}`, showUsage });
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-h' || arg === '--help') return { type: 'help' };
    if (!arg.startsWith('--') || arg === '--') {
      return arg.startsWith('-') ? fail(`unknown option ${arg}`, true) : fail(`unexpected argument ${JSON.stringify(arg)}`, true);
    }
    const eq = arg.indexOf('=');
    const key = arg.slice(2, eq === -1 ? undefined : eq);
    if (SWITCHES.has(key)) {
      if (eq !== -1) return fail(`option --${key} takes no value, got ${JSON.stringify(arg)}`, true);
      if (key === 'force') o.force = true;
      else o.allowNewQueue = key === 'allow-new-queue';
      continue;
    }
    if (!VALUE_FLAGS.has(key)) return fail(`unknown option --${key}`, true);
    let value: string;
    if (eq !== -1) {
      value = arg.slice(eq + 1);
    } else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) return fail(`option --${key} needs a value`, true);
      value = next;
      i++;
    }
    if (value === '') return fail(`option --${key} needs a value, got an empty string`);
    switch (key) {
      case 'port':
        if (!/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
          return fail(`--port must be a number from 1 to 65535, got ${JSON.stringify(value)}`);
        }
        o.port = value;
        break;
      case 'tmpdir':
        o.tmpdir = value;
        break;
      case 'env':
        o.env = value;
        break;
      case 'host':
        o.host = value;
        break;
      case 'addr':
        o.addr = value;
        break;
    }
  }
  return { type: 'install', options: o };
}

/** `config/config.json` text: RQ's keys in RQ's order, compact, plus a newline. Also the bench's. */
export function mainConfigText(o: InstallOptions): string {
  return `${JSON.stringify({ env: o.env, host: o.host, port: o.port, addr: o.addr, tmpdir: o.tmpdir, allow_new_queue: o.allowNewQueue })}\n`;
}

/**
 * A built-in queue's `config.json` text, as queue creation writes it. Its script
 * is `./libexec/<name>_script` in the package; for an install root elsewhere the path is
 * absolute, so it resolves from there too.
 */
function builtinQueueConfigText(name: (typeof BUILTIN_QUEUES)[number], root: string): string {
  const dir = path.resolve(root) === PACKAGE_ROOT ? './libexec' : path.join(PACKAGE_ROOT, 'libexec');
  return serialiseQueueConfig(normaliseQueueConfig({ name, script: `${dir}/${name}_script`, num_workers: 1, exec_prefix: '' }));
}

/** Make `dir` (and its parents) if needed; true when it was created. */
function makeDir(dir: string): boolean {
  return fs.mkdirSync(dir, { recursive: true }) !== undefined;
}

interface InstallIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

/**
 * Install into `root`. Returns the exit status: 0 done, 1 refused (already installed, or
 * the root has a shape rq cannot use). Prints one line per thing it created or replaced.
 */
function install(root: string, o: InstallOptions, io: InstallIo): number {
  const layout = rootLayout(root);
  const tmpdir = checkTmpdir(o.tmpdir, process.cwd());
  if (tmpdir.problem) {
    io.err(`rq-install: --tmpdir must be an existing writable directory, got ${JSON.stringify(o.tmpdir)} (${tmpdir.problem})`);
    return 1;
  }
  const hadConfig = fs.existsSync(layout.mainConfig);
  if (hadConfig && !o.force) {
    io.out('Already installed');
    return 1;
  }
  const queuesStat = lstatOrUndefinedSync(layout.queuesDir);
  if (queuesStat && !queuesStat.isDirectory()) {
    io.err(`rq-install: ${layout.queuesDir} exists and is not a directory`);
    return 1;
  }
  const linkPath = path.join(root, 'queue');
  const linkStat = lstatOrUndefinedSync(linkPath);
  if (linkStat && !linkStat.isSymbolicLink()) {
    io.err(`rq-install: ${linkPath} exists and is not a symlink; queues live in queues/, with queue -> queues for RQ's tools. Move it away first.`);
    return 1;
  }

  const rel = (p: string): string => path.relative(root, p);
  if (makeDir(layout.configDir)) io.out(`Created ${rel(layout.configDir)}/`);
  // Owner-only: it will hold basic_auth users and the front doors' tokens and passwords.
  writeFileDurably(layout.mainConfig, mainConfigText({ ...o, tmpdir: tmpdir.dir }), { mode: SECRET_FILE_MODE });
  io.out(`${hadConfig ? 'Replaced' : 'Created'} ${rel(layout.mainConfig)}`);

  if (makeDir(layout.queuesDir)) io.out(`Created ${rel(layout.queuesDir)}/`);
  if (!linkStat) {
    fs.symlinkSync(path.basename(layout.queuesDir), linkPath);
    io.out(`Created queue -> ${path.basename(layout.queuesDir)}`);
  } else {
    const target = fs.readlinkSync(linkPath);
    if (target !== path.basename(layout.queuesDir)) io.err(`rq-install: note: kept the symlink queue -> ${target}; rq itself uses ${rel(layout.queuesDir)}/`);
  }
  if (makeDir(path.dirname(layout.logFile))) io.out('Created log/');

  for (const name of BUILTIN_QUEUES) {
    const q = queueLayout(layout, name);
    ensureQueueDirs(q);
    const exists = lstatOrUndefinedSync(q.configFile) !== undefined;
    if (exists && !o.force) {
      io.out(`Kept queue ${name} (its config.json exists; --force replaces it)`);
      continue;
    }
    const text = builtinQueueConfigText(name, root);
    writeFileDurably(q.configFile, text);
    io.out(`${exists ? 'Replaced' : 'Created'} queue ${name} ${text}`);
  }
  return 0;
}

/** The command: parse, install into `installRoot()`, return the exit status. */
export function main(argv: readonly string[]): number {
  const io: InstallIo = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  };
  const parsed = parseInstallArgs(argv);
  if (parsed.type === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  if (parsed.type === 'error') {
    io.err(parsed.message);
    if (parsed.showUsage) process.stderr.write(USAGE);
    return 1;
  }
  try {
    return install(installRoot(), parsed.options, io);
  } catch (thrown) {
    io.err(`rq-install: ${thrown instanceof Error ? thrown.message : String(thrown)}`);
    return 1;
  }
}
