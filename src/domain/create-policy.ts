/**
 * What a queue created over HTTP may run (`POST /new_queue`, `POST /new_queue_link`): the
 * one check the web makes before it asks rq-mgr for a queue. It is pure: it reads a
 * normalised queue config and paths the caller resolved, and answers with the first rule
 * the config breaks, in one line (every value given is quoted as JSON) that names what
 * was refused and what would allow it.
 *
 * - The script lies inside the install root or a directory of `script_dirs`, both as
 *   given (made absolute, no symlink followed) and as its real path: the queue process
 *   resolves the path again before every run, so a symlink outside on the way could be
 *   pointed elsewhere later. Neither lies in `queues/` (messages and their attachments
 *   live there, the only files in the root that the web writes) nor in rq's own
 *   directories of RQ_DIRS (rq's programs and their dependencies). This holds whether
 *   the script can run now or not: rq-mgr checks that later, and a file can change
 *   in between.
 * - `exec_prefix` is one of `exec_prefixes`; null counts as `bash -lc`, and blanks before
 *   or after it do not count (the command is trimmed, and split on blanks).
 * - Every `env_vars` name is a name (`PATH=/x` as a name would set `PATH`), matches a
 *   pattern of `web_env_vars`, and is none of ENV_RULES, which change what a shell, an
 *   interpreter or a library runs; `web_env_vars` cannot allow those.
 * - A linked config file lies outside `queues/`: rq-mgr links it, and the queue reads it
 *   again at every start and reload, so it must not be a file the web can write.
 *
 * rq-mgr's socket (local tools) and queue configs written on disk are not limited.
 */
import path from 'node:path';
import type { QueueConfig } from './queue-config.js';

/** A path two ways: absolute as given (made absolute lexically, no symlink followed) and real. */
export interface Resolved {
  given: string;
  real: string;
}

/**
 * rq's own directories in the install root, besides `queues/`: its programs (`bin/`,
 * `dist/`), their dependencies, its configuration and logs. `libexec/` is not among them:
 * its scripts are meant to run as queues.
 */
export const RQ_DIRS = ['node_modules', 'dist', 'bin', 'config', 'log'] as const;

/** config.json's limits, with every directory both as given and as a real path. */
export interface CreatePolicy {
  root: Resolved;
  /** `script_dirs`, relative entries taken from the install root. */
  scriptDirs: readonly Resolved[];
  queuesDir: Resolved;
  /** The directories of RQ_DIRS in the root, by name. */
  rqDirs: ReadonlyArray<readonly [name: string, dir: Resolved]>;
  execPrefixes: readonly string[];
  /** `web_env_vars`: the patterns (`*` for any run of characters) an `env_vars` name must match. */
  envVars: readonly string[];
}

/**
 * The `env_vars` names a queue created over HTTP may not set, whatever `web_env_vars`
 * says, and why: patterns, `*` for any run of characters. No such list is complete, so
 * they are a floor under `web_env_vars`, which admits only rq's own names by default.
 */
export const ENV_RULES: ReadonlyArray<readonly [name: string, why: string]> = [
  ['PATH', 'where commands are looked up'],
  ['LD_*', 'libraries loaded into every program (LD_PRELOAD, LD_LIBRARY_PATH)'],
  ['NODE_*', 'options, preloaded code and module path of every node (NODE_OPTIONS, NODE_PATH)'],
  ['BASH_ENV', 'a file every non-interactive bash runs first'],
  ['ENV', 'a file every interactive sh runs first'],
  ['HOME', 'the home directory: a login bash (bash -lc) runs its .bash_profile, and many programs read their settings there'],
  ['ZDOTDIR', 'where zsh reads its startup files'],
  ['XDG_*', 'where programs read their settings and data'],
  ['BASH_FUNC_*', 'functions bash imports; they replace the commands a login shell\'s profile runs'],
  ['SHELLOPTS', 'options of every bash: with xtrace, bash runs the command substitutions in PS4'],
  ['BASHOPTS', 'options of every bash'],
  ['PS4', 'expanded, command substitutions included, before every command a bash traces (set -x)'],
  ['OPENSSL_*', 'the OpenSSL configuration, which loads engines and providers (shared libraries) into every program using OpenSSL, node included'],
  ['SSL_CERT_*', 'the certificates OpenSSL trusts'],
  ['GCONV_PATH', 'where glibc loads character set converters (shared libraries) from'],
  ['LOCPATH', 'where glibc reads locales from'],
  ['NLSPATH', 'where programs read their message catalogs from'],
  ['GLIBC_TUNABLES', 'settings of glibc in every program'],
  ['PYTHON*', 'the module path and startup code of every python (PYTHONPATH, PYTHONSTARTUP)'],
  ['PERL*', 'the module path, options and so modules of every perl (PERL5LIB, PERL5OPT)'],
  ['RUBY*', 'the library path and options, and so libraries, of every ruby (RUBYLIB, RUBYOPT)'],
  ['GEM_*', 'where ruby looks for gems'],
  ['BUNDLE_*', 'the Gemfile (ruby code) and settings of bundler'],
  ['JAVA_TOOL_OPTIONS', 'options, and so agents (code), every java loads'],
  ['_JAVA_OPTIONS', 'options, and so agents (code), every java loads'],
  ['JDK_JAVA_OPTIONS', 'options, and so agents (code), every java loads'],
  ['CLASSPATH', 'where java looks for classes'],
  ['GIT_*', 'the commands git runs (GIT_SSH, GIT_EXEC_PATH) and its settings'],
  ['*_proxy', 'where HTTP clients send their requests'],
  ['*_PROXY', 'where HTTP clients send their requests'],
  ['TMPDIR', 'where programs make their temporary files'],
];

/** Whether `name` matches `pattern`, where `*` stands for any run of characters. */
export function matchesPattern(pattern: string, name: string): boolean {
  const parts = pattern.split('*');
  const first = parts[0]!;
  if (parts.length === 1) return name === first;
  const last = parts[parts.length - 1]!;
  const end = name.length - last.length;
  if (end < first.length || !name.startsWith(first) || !name.endsWith(last)) return false;
  let at = first.length;
  for (const part of parts.slice(1, -1)) {
    const found = name.indexOf(part, at);
    if (found < 0 || found + part.length > end) return false;
    at = found + part.length;
  }
  return true;
}

/** A config.json list as a reason shows it. */
function listed(values: readonly string[]): string {
  return values.length === 0 ? 'none' : values.map((v) => JSON.stringify(v)).join(', ');
}

/** `exec_prefix` as it counts: null is `bash -lc`; leading blanks and unescaped trailing blanks dropped. */
function effectivePrefix(prefix: string | null): string {
  return (prefix ?? 'bash -lc').replace(/^\s+/, '').replace(/(?<!\\)[ \t]+$/, '');
}

/** Whether `file` lies strictly inside `dir` (both absolute, as they are: no symlink is followed). */
export function isInsideDir(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/** Whether `file` lies inside `dir` as given or as its real path. */
function isIn(dir: Resolved, file: string): boolean {
  return isInsideDir(dir.given, file) || isInsideDir(dir.real, file);
}

function envRefusal(envVars: Record<string, string>, allowed: readonly string[]): string | undefined {
  for (const [name, value] of Object.entries(envVars)) {
    if (name.includes('=') || name.includes('\0') || value.includes('\0')) {
      return `env_vars ${JSON.stringify(name)} is not a variable name and value (no "=" in a name, no NUL byte)`;
    }
    const rule = ENV_RULES.find(([pattern]) => matchesPattern(pattern, name));
    if (rule) {
      return `env_vars may not set ${JSON.stringify(name)} in a queue created over HTTP (${rule[1]}), whatever "web_env_vars" says; set it in the queue's config.json on disk`;
    }
    if (!allowed.some((pattern) => matchesPattern(pattern, name))) {
      return `env_vars may not set ${JSON.stringify(name)} in a queue created over HTTP; "web_env_vars" in config.json lists the name patterns it may set: ${listed(allowed)}`;
    }
  }
  return undefined;
}

/** Why the script may not run in a queue created over HTTP, or undefined. */
function scriptRefusal(given: string, script: Resolved, policy: CreatePolicy): string | undefined {
  const paths = [script.given, script.real];
  const what = `script ${JSON.stringify(given)} (real path ${JSON.stringify(script.real)})`;
  if (paths.some((p) => isIn(policy.queuesDir, p))) {
    return `${what} is in queues/, where messages and attachments live: a queue created over HTTP never runs a file from there`;
  }
  const own = policy.rqDirs.find(([, dir]) => paths.some((p) => isIn(dir, p)));
  if (own) {
    return `${what} is in ${own[0]}/, one of rq's own directories (${RQ_DIRS.map((d) => `${d}/`).join(', ')}): a queue created over HTTP never runs rq's programs or their dependencies`;
  }
  const allowed = (p: string): boolean => [policy.root, ...policy.scriptDirs].some((dir) => isIn(dir, p));
  const hint = '"script_dirs" in config.json lists the other directories a queue created over HTTP may run scripts from';
  if (!allowed(script.real)) return `${what} is outside the install root; ${hint}`;
  if (!allowed(script.given)) {
    return `${what} is outside the install root as given (${JSON.stringify(script.given)}): the queue resolves it again before every run, and a symlink outside the root could be pointed elsewhere by then; ${hint}`;
  }
  return undefined;
}

/**
 * Why the web may not create a queue with `config`, or undefined when it may. `script`
 * is the script's path as the queue process resolves it: from the install root, then
 * symlinks followed (for a file that does not exist, the real path of its nearest
 * existing parent, with the rest of the path).
 */
export function createRefusal(config: QueueConfig, script: Resolved, policy: CreatePolicy): string | undefined {
  const prefix = effectivePrefix(config.exec_prefix);
  if (!policy.execPrefixes.some((p) => effectivePrefix(p) === prefix)) {
    const given = config.exec_prefix === null ? 'null (bash -lc)' : JSON.stringify(config.exec_prefix);
    return `exec_prefix ${given} is not allowed in a queue created over HTTP; "exec_prefixes" in config.json lists the allowed ones: ${listed(policy.execPrefixes)}`;
  }
  return envRefusal(config.env_vars, policy.envVars) ?? scriptRefusal(config.script, script, policy);
}

/** Why the web may not link a queue's config to `realFile` (already known to be inside the root), or undefined. */
export function linkRefusal(jsonPath: string, realFile: string, policy: CreatePolicy): string | undefined {
  if (!isIn(policy.queuesDir, realFile)) return undefined;
  return `queue[json_path] ${JSON.stringify(jsonPath)} (real path ${JSON.stringify(realFile)}) is in queues/, which the web writes: a linked config is read again at every reload, so it must be a file the web cannot change`;
}
