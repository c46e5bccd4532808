/**
 * The router's rules (docs/router.md) in rq's own format: `config/rq_router_rules.json`,
 * a JSON array of rules tried in order. This module owns that format: parsing with strict
 * validation (every mistake is an RqError `RQ_CONFIG` that names the rule and the field;
 * RQ silently ignored a statement it could not use), matching a message to its rule,
 * choosing the target hosts (the random source is injectable), and RQ's address
 * transform from an old destination and a host to the new destination URL.
 *
 * A rule: `{"name", "action", "src", "dest", "route", "log", "delay", "comment"}`.
 * `action` is `relay`, `balance`, `done` or `err`, or a choice on an environment variable
 * `{"env": "BR_ENV", "equals": "prod", "then": "relay", "else": "done"}`, resolved when the
 * file is loaded (RQ evaluated its Ruby conditional then too). `src` and `dest` are
 * JavaScript regular expressions (no flags), matched anywhere in the message's field as
 * Ruby's `=~` did. The rule named `default` matches every message; it may only come last.
 * Without one, the built-in default applies: `err`, logged.
 *
 * RQ's Ruby rules (`config/rq_router_rules.rb`) are not read: such a file, or Ruby text,
 * is refused with a pointer to the JSON format, and `rubyRulesWarning` tells the web and
 * the router when only the Ruby file is there. Every error message is one line.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RqError } from '../domain/errors.js';
import { isPlainObject } from '../domain/message.js';
import { isValidQueueName } from '../domain/names.js';

/** The rules file, in the install root's `config/`. While it exists the web is in router mode. */
export const RULES_FILE_NAME = 'rq_router_rules.json';
/** RQ's rules file, which rq does not read. */
const RUBY_RULES_FILE_NAME = 'rq_router_rules.rb';
const RUBY_RULES_NOT_READ = `RQ's Ruby rules are not read; rq's rules are JSON in config/${RULES_FILE_NAME} (docs/router.md)`;

const ACTIONS = ['relay', 'balance', 'done', 'err'] as const;
type Action = (typeof ACTIONS)[number];

/** The router gives up on a message after this long, as RQ's did. */
export const ROUTER_LIMIT_SECS = 60;
/**
 * The longest `delay`, well inside ROUTER_LIMIT_SECS: a relay action that the limit cut
 * short would leave some copies made, and a clone of the message would make them again.
 */
const MAX_DELAY_SECS = 30;

export interface Rule {
  name: string;
  /** The action, a conditional one already resolved against the environment. */
  action: Action;
  src: RegExp | null;
  dest: RegExp | null;
  /**
   * Target hosts (`host`, `host:port` or a URL `http://…/q/<queue>`): all strings, or all
   * groups of strings. `relay` sends to every string, or to one host of each group;
   * `balance` sends to one of the strings.
   */
  route: (string | string[])[];
  /** Append a line to `log/rq_router.log` (always for `err`). */
  log: boolean;
  /** Seconds to wait before acting, at most MAX_DELAY_SECS. */
  delay: number;
}

const FIELDS = new Set(['name', 'action', 'src', 'dest', 'route', 'log', 'delay', 'comment']);
const CONDITION_FIELDS = new Set(['env', 'equals', 'then', 'else']);
const DEFAULT_NAME = 'default';
/** What applies when the file has no `default` rule (RQ's built-in default). */
const BUILTIN_DEFAULT: Rule = { name: DEFAULT_NAME, action: 'err', src: null, dest: null, route: [], log: true, delay: 0 };
/** `host` or `host:port` (an IPv6 address in brackets); a host starting with `http` must be a URL. */
const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?$/;
/**
 * A whole destination URL: `http://<host[:port]>[/<root>…]/q/<queue>`. The queue engine
 * gives the relay an `http:` destination only, and the relay posts to `<dest>/new_message`;
 * no root segment is `q`, so the queue is the part after the first `/q/`, as RQ reads it.
 */
const DEST_URL = /^http:\/\/([^/?#]+)(?:\/(?!q\/)[^/?#\s]+)*\/q\/([^/?#]*)$/;
const DEST_URL_FORM = 'http://<host>[:<port>][/<root>]/q/<queue>';

/**
 * Every error of this module: RQ_CONFIG, on one line (a JSON or regex error may quote text
 * with newlines). It carries no cause: the message already says all of it, and `explain`
 * would print a cause again on a line of its own (in the `.down` flag).
 */
function invalid(message: string): never {
  throw new RqError('RQ_CONFIG', message.replace(/\s*[\r\n]+\s*/g, ' '));
}

function shown(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}

function isAction(value: unknown): value is Action {
  return typeof value === 'string' && (ACTIONS as readonly string[]).includes(value);
}

/** The action a rule takes, and every action it could take under another environment. */
function parseAction(raw: unknown, env: Readonly<Record<string, string | undefined>>, where: string): { action: Action; possible: Action[] } {
  const expected = `must be one of ${ACTIONS.join(', ')}, or {"env": …, "equals": …, "then": …, "else": …}`;
  if (isAction(raw)) return { action: raw, possible: [raw] };
  if (!isPlainObject(raw)) invalid(`${where}: "action" ${expected}, got ${shown(raw)}`);
  for (const key of Object.keys(raw)) {
    if (!CONDITION_FIELDS.has(key)) invalid(`${where}: "action" has an unknown field ${JSON.stringify(key)} (a condition has env, equals, then, else)`);
  }
  const { env: name, equals, then, else: otherwise } = raw;
  if (typeof name !== 'string' || name === '') invalid(`${where}: "action.env" must name an environment variable, got ${shown(name)}`);
  if (typeof equals !== 'string') invalid(`${where}: "action.equals" must be a string, got ${shown(equals)}`);
  if (!isAction(then)) invalid(`${where}: "action.then" must be one of ${ACTIONS.join(', ')}, got ${shown(then)}`);
  if (!isAction(otherwise)) invalid(`${where}: "action.else" must be one of ${ACTIONS.join(', ')}, got ${shown(otherwise)}`);
  return { action: env[name] === equals ? then : otherwise, possible: [then, otherwise] };
}

function parsePattern(raw: unknown, field: 'src' | 'dest', where: string): RegExp | null {
  if (raw === undefined) return null;
  if (typeof raw !== 'string') invalid(`${where}: "${field}" must be a regular expression in a string, got ${shown(raw)}`);
  try {
    return new RegExp(raw);
  } catch (e) {
    return invalid(`${where}: "${field}" is not a valid regular expression: ${(e as Error).message}`);
  }
}

function checkHost(host: unknown, where: string): string {
  if (typeof host !== 'string' || host === '') invalid(`${where}: "route" hosts must be non-empty strings, got ${shown(host)}`);
  if (host.startsWith('http')) {
    const url = DEST_URL.exec(host);
    if (!url || !HOST_PORT.test(url[1]!)) {
      invalid(`${where}: "route" host ${JSON.stringify(host)} starts with "http", so it must be a URL ${DEST_URL_FORM}: the copy's destination as it is (the relay delivers over http only)`);
    }
    if (!isValidQueueName(url[2])) invalid(`${where}: "route" host ${JSON.stringify(host)} does not end in a valid queue name after /q/, got ${JSON.stringify(url[2])}`);
  } else if (!HOST_PORT.test(host)) {
    invalid(`${where}: "route" host ${JSON.stringify(host)} is not host, host:port or a URL ${DEST_URL_FORM}`);
  }
  return host;
}

function parseRoute(raw: unknown, possible: readonly Action[], where: string): (string | string[])[] {
  const sends = possible.filter((a) => a === 'relay' || a === 'balance');
  if (raw === undefined) {
    if (sends.length > 0) invalid(`${where}: "route" is required for action ${sends[0]}: the hosts to send to`);
    return [];
  }
  if (sends.length === 0) invalid(`${where}: "route" is only used by the actions relay and balance, and this rule can only ${possible.join(' or ')}`);
  if (!Array.isArray(raw) || raw.length === 0) invalid(`${where}: "route" must be a non-empty array of hosts, or of arrays of hosts, got ${shown(raw)}`);
  const groups = raw.filter((h) => Array.isArray(h)).length;
  if (groups === 0) return raw.map((h) => checkHost(h, where));
  if (groups !== raw.length) invalid(`${where}: "route" must be all hosts or all arrays of hosts, not a mix`);
  if (possible.includes('balance')) invalid(`${where}: "route" with arrays of hosts is for relay only; balance sends to one host of a plain list`);
  return raw.map((group: unknown[]) => {
    if (group.length === 0) invalid(`${where}: "route" has an empty array of hosts`);
    return group.map((h) => checkHost(h, where));
  });
}

function parseRule(raw: unknown, index: number, env: Readonly<Record<string, string | undefined>>): Rule {
  if (!isPlainObject(raw)) invalid(`rule ${index + 1}: must be an object, got ${shown(raw)}`);
  const name = raw['name'];
  if (typeof name !== 'string' || name.trim() === '') invalid(`rule ${index + 1}: "name" must be a non-empty string, got ${shown(name)}`);
  const where = `rule ${index + 1} (${JSON.stringify(name)})`;
  for (const key of Object.keys(raw)) {
    if (!FIELDS.has(key)) invalid(`${where}: unknown field ${JSON.stringify(key)} (a rule has ${[...FIELDS].join(', ')})`);
  }
  if (raw['comment'] !== undefined && typeof raw['comment'] !== 'string') invalid(`${where}: "comment" must be a string, got ${shown(raw['comment'])}`);
  if (raw['action'] === undefined) invalid(`${where}: "action" is required`);
  const { action, possible } = parseAction(raw['action'], env, where);
  const src = parsePattern(raw['src'], 'src', where);
  const dest = parsePattern(raw['dest'], 'dest', where);
  if (name === DEFAULT_NAME && (src || dest)) invalid(`${where}: the default rule matches every message, so it takes no "src" or "dest"`);
  if (name !== DEFAULT_NAME && !src && !dest) invalid(`${where}: needs "src" or "dest" (only the rule named "default" matches every message)`);
  const log = raw['log'] ?? false;
  if (typeof log !== 'boolean') invalid(`${where}: "log" must be true or false, got ${shown(log)}`);
  const delay = raw['delay'] ?? 0;
  if (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECS) {
    invalid(
      `${where}: "delay" must be a whole number of seconds from 0 to ${MAX_DELAY_SECS} (the router gives up on a message after ${ROUTER_LIMIT_SECS} s, which could cut a relay short), got ${shown(delay)}`,
    );
  }
  return { name, action, src, dest, route: parseRoute(raw['route'], possible, where), log: log || action === 'err', delay };
}

/**
 * Parse the text of a rules file. `env` resolves conditional actions. The result is the
 * file's rules in order, ending with exactly one default rule.
 */
export function parseRules(text: string, env: Readonly<Record<string, string | undefined>>): Rule[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    // RQ's format: `rule "<name>"` opens a rule, at the start of a line.
    if (/^rule\s/m.test(text)) invalid(RUBY_RULES_NOT_READ);
    return invalid(`not valid JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(raw)) invalid(`must be a JSON array of rules, got ${isPlainObject(raw) ? 'an object' : shown(raw)}`);
  const rules = raw.map((r, i) => parseRule(r, i, env));
  const names = new Set<string>();
  rules.forEach((rule, i) => {
    if (names.has(rule.name)) invalid(`rule ${i + 1} (${JSON.stringify(rule.name)}): another rule has the same name`);
    names.add(rule.name);
    if (rule.name === DEFAULT_NAME && i !== rules.length - 1) invalid(`rule ${i + 1} ("default"): the default rule must be the last rule`);
  });
  return rules.at(-1)?.name === DEFAULT_NAME ? rules : [...rules, BUILTIN_DEFAULT];
}

/** Read and parse a rules file; every failure (a missing file too) names the file. */
export function loadRules(file: string, env: Readonly<Record<string, string | undefined>>): Rule[] {
  if (file.endsWith('.rb')) invalid(`${file}: ${RUBY_RULES_NOT_READ}`);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    return invalid(`${file}: cannot read the rules file: ${(e as Error).message}`);
  }
  try {
    return parseRules(text, env);
  } catch (e) {
    return invalid(`${file}: ${(e as Error).message}`);
  }
}

/**
 * A warning when `configDir` has RQ's `rq_router_rules.rb` but not rq's JSON rules file:
 * the operator probably expects router mode, which only the JSON file turns on.
 */
export function rubyRulesWarning(configDir: string): string | undefined {
  const ruby = path.join(configDir, RUBY_RULES_FILE_NAME);
  if (!fs.existsSync(ruby) || fs.existsSync(path.join(configDir, RULES_FILE_NAME))) return undefined;
  return `${ruby} is ignored, so this host is not in router mode: ${RUBY_RULES_NOT_READ}`;
}

/** A rule as one JSON line (what `rq verify_rules --verbose` prints). */
export function describeRule(rule: Rule): string {
  return JSON.stringify({ ...rule, src: rule.src?.source ?? null, dest: rule.dest?.source ?? null });
}

function matches(pattern: RegExp | null, value: unknown): boolean {
  return pattern === null || (typeof value === 'string' && pattern.test(value));
}

/** The first rule whose `src` and `dest` (those it has) match the message; a missing field does not match. */
export function matchRule(rules: readonly Rule[], msg: Readonly<Record<string, unknown>>): Rule {
  return rules.find((r) => matches(r.src, msg['src']) && matches(r.dest, msg['dest'])) ?? BUILTIN_DEFAULT;
}

/** A random index below `n`, the default random source of `selectHosts`. */
function randomIndex(n: number): number {
  return Math.floor(Math.random() * n);
}

/**
 * The hosts a rule sends to: `relay` → every string of the route, or one random host of
 * each group; any other action → one random entry. `pick(n)` returns an index below `n`.
 */
export function selectHosts(rule: Pick<Rule, 'action' | 'route'>, pick: (n: number) => number = randomIndex): string[] {
  const one = (entry: string | string[]): string => (typeof entry === 'string' ? entry : entry[pick(entry.length)]!);
  if (rule.route.length === 0) return [];
  if (rule.action === 'relay') return rule.route.map(one);
  return [one(rule.route[pick(rule.route.length)]!)];
}

/**
 * RQ's address transform: the destination a message gets on `host`. An `http…` host is
 * the destination as it is; a host without a port gets `:3333`. The queue is the part of
 * `oldDest` after its first `/q/` (a URL or a `/q/<queue>` path), else `oldDest` itself.
 */
export function transformDest(oldDest: string, host: string): string {
  if (host.startsWith('http')) return host;
  const hostPort = /:\d+$/.test(host) ? host : `${host}:3333`;
  const at = oldDest.indexOf('/q/');
  const queue = at >= 0 && (oldDest.startsWith('http') || at === 0) ? oldDest.slice(at + 3) : oldDest;
  return `http://${hostPort}/q/${queue}`;
}
