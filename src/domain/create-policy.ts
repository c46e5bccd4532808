/**
 * What a queue created over HTTP may run (`POST /new_queue`, `POST /new_queue_link`): the
 * one check the web makes before it asks rq-mgr for a queue. It is pure: it reads a
 * normalised queue config and real paths the caller resolved, and answers with the first
 * rule the config breaks, in one line (every value given is quoted as JSON) that names
 * what was refused and what would allow it.
 *
 * - The script, when it resolves to a file that can run, lies inside the install root or
 *   a directory of `script_dirs`, and not inside `queues/`: messages and their
 *   attachments live there, the only files in the root that the web writes. (A script
 *   that cannot run is left to rq-mgr, which refuses it.)
 * - `exec_prefix` is one of `exec_prefixes`; null counts as `bash -lc`, and blanks before
 *   or after it do not count (the command is trimmed, and split on blanks).
 * - `env_vars` sets none of the names of ENV_RULES, which change what a shell or an
 *   interpreter runs, and every name is a name (`PATH=/x` as a name would set `PATH`).
 * - A linked config file lies outside `queues/`: rq-mgr links it, and the queue reads it
 *   again at every start and reload, so it must not be a file the web can write.
 *
 * rq-mgr's socket (local tools) and queue configs written on disk are not limited.
 */
import path from 'node:path';
import type { QueueConfig } from './queue-config.js';

/** config.json's limits, with every directory as a real path (symlinks followed). */
export interface CreatePolicy {
  root: string;
  /** `script_dirs`, relative entries taken from the install root. */
  scriptDirs: readonly string[];
  queuesDir: string;
  execPrefixes: readonly string[];
}

/**
 * The `env_vars` names a queue created over HTTP may not set, and why: a name, or a
 * prefix ending in `*`.
 */
export const ENV_RULES: ReadonlyArray<readonly [name: string, why: string]> = [
  ['PATH', 'where commands are looked up'],
  ['LD_*', 'libraries loaded into every program (LD_PRELOAD, LD_LIBRARY_PATH)'],
  ['NODE_OPTIONS', 'options and preloaded code of every node'],
  ['BASH_ENV', 'a file every non-interactive bash runs first'],
  ['ENV', 'a file every interactive sh runs first'],
  ['PYTHON*', 'the module path and startup code of every python (PYTHONPATH, PYTHONSTARTUP)'],
  ['BASH_FUNC_*', 'functions bash imports; they replace the commands a login shell\'s profile runs'],
  ['SHELLOPTS', 'options of every bash: with xtrace, bash runs the command substitutions in PS4'],
  ['PS4', 'expanded, command substitutions included, before every command a bash traces (set -x)'],
  ['PERL5LIB', 'the module path of every perl'],
  ['PERLLIB', 'the module path of every perl'],
  ['PERL5OPT', 'options, and so modules, every perl loads'],
  ['RUBYLIB', 'the library path of every ruby'],
  ['RUBYOPT', 'options, and so libraries, every ruby loads'],
];

/** `exec_prefix` as it counts: null is `bash -lc`; leading blanks and unescaped trailing blanks dropped. */
function effectivePrefix(prefix: string | null): string {
  return (prefix ?? 'bash -lc').replace(/^\s+/, '').replace(/(?<!\\)[ \t]+$/, '');
}

/** Whether `file` lies strictly inside `dir` (both absolute, as they are: no symlink is followed). */
export function isInsideDir(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

function envRefusal(envVars: Record<string, string>): string | undefined {
  for (const [name, value] of Object.entries(envVars)) {
    if (name.includes('=') || name.includes('\0') || value.includes('\0')) {
      return `env_vars ${JSON.stringify(name)} is not a variable name and value (no "=" in a name, no NUL byte)`;
    }
    const rule = ENV_RULES.find(([n]) => (n.endsWith('*') ? name.startsWith(n.slice(0, -1)) : name === n));
    if (rule) {
      return `env_vars may not set ${JSON.stringify(name)} in a queue created over HTTP (${rule[1]}); set it in the queue's config.json on disk`;
    }
  }
  return undefined;
}

/**
 * Why the web may not create a queue with `config`, or undefined when it may.
 * `realScript` is the script's real path when it resolves to a file that can run.
 */
export function createRefusal(config: QueueConfig, realScript: string | undefined, policy: CreatePolicy): string | undefined {
  const prefix = effectivePrefix(config.exec_prefix);
  if (!policy.execPrefixes.some((p) => effectivePrefix(p) === prefix)) {
    const given = config.exec_prefix === null ? 'null (bash -lc)' : JSON.stringify(config.exec_prefix);
    return `exec_prefix ${given} is not allowed in a queue created over HTTP; "exec_prefixes" in config.json lists the allowed ones: ${policy.execPrefixes.map((p) => JSON.stringify(p)).join(', ')}`;
  }
  const env = envRefusal(config.env_vars);
  if (env) return env;
  if (realScript === undefined) return undefined;
  const script = `script ${JSON.stringify(config.script)} (real path ${JSON.stringify(realScript)})`;
  if (isInsideDir(policy.queuesDir, realScript)) {
    return `${script} is in queues/, where messages and attachments live: a queue created over HTTP never runs a file from there`;
  }
  if (![policy.root, ...policy.scriptDirs].some((dir) => isInsideDir(dir, realScript))) {
    return `${script} is outside the install root; "script_dirs" in config.json lists the other directories a queue created over HTTP may run scripts from`;
  }
  return undefined;
}

/** Why the web may not link a queue's config to `realFile` (already known to be inside the root), or undefined. */
export function linkRefusal(jsonPath: string, realFile: string, policy: CreatePolicy): string | undefined {
  if (!isInsideDir(policy.queuesDir, realFile)) return undefined;
  return `queue[json_path] ${JSON.stringify(jsonPath)} (real path ${JSON.stringify(realFile)}) is in queues/, which the web writes: a linked config is read again at every reload, so it must be a file the web cannot change`;
}
