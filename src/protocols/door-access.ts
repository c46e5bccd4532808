/**
 * Which queues each pull front door may touch: the one place that decides, for Cloudq,
 * RQMS and Workq. lmstfy closes a namespace with tokens: its queue `<namespace>/<queue>`
 * is the rq queue `<namespace>.<queue>`, and only a client holding one of the namespace's
 * tokens reaches it through lmstfy. The other doors have no tokens, so they must not be a
 * way around them: a queue in a protected namespace is closed to a door unless one of
 * the door's `queues` patterns names it.
 *
 * - A queue's namespace is the part of its name before the first dot (namespaces have
 *   none); a name without a dot is in no namespace.
 * - A namespace is protected when the lmstfy door is on and checks tokens (`auth` not
 *   false) and the namespace has at least one token: in config.json, or minted by the
 *   admin routes. The doors all read the lmstfy door's own live table, so a token minted
 *   now closes its namespace to the other doors at once, and revoking its last token
 *   opens it again. Without an lmstfy section there are no namespaces and nothing is
 *   closed; with `auth: false` (lmstfy's dev mode) lmstfy itself is open, and so is
 *   every namespace.
 * - `queues` (in `protocols.cloudq`, `protocols.rqms`, `protocols.workq`): an array of
 *   patterns of queue names, `*` matching any run of characters (`"nsB.*"`). @default []:
 *   no protected queue. Queues in no protected namespace are open to every door, whatever
 *   the patterns say.
 */
import * as v from 'valibot';
import { parseConfigValue } from '../domain/config-check.js';
import type { MainConfig } from '../domain/main-config.js';
import { RqError } from '../domain/errors.js';
import type { RootLayout } from '../store/layout.js';
import { parseLmstfySection, type LmstfyConfig } from './lmstfy-config.js';
import { TokenTable } from './lmstfy-tokens.js';

/** A pattern's characters: those of a protocol queue name (names.ts), and `*`. */
const PATTERN = /^[A-Za-z0-9_.$()+*-]{1,255}$/;

/** The lmstfy door's parsed section and its live token table. */
export interface LmstfyState {
  config: LmstfyConfig;
  tokens: TokenTable;
}

/** lmstfy's namespaces as every door sees them; built once per web process (servers.ts). */
export class Namespaces {
  private readonly state: LmstfyState | undefined;

  private constructor(state: LmstfyState | undefined) {
    this.state = state;
  }

  /** Parse the lmstfy section (if any) and read its token file; RQ_CONFIG for a bad one. */
  static open(root: RootLayout, main: MainConfig): Namespaces {
    const section = main.protocols.lmstfy;
    if (section === undefined) return new Namespaces(undefined);
    const config = parseLmstfySection(section.raw);
    return new Namespaces({ config, tokens: new TokenTable(root.configDir, config.preset) });
  }

  /** The lmstfy door's config and tokens; only the lmstfy door asks, and it exists only with its section. */
  lmstfy(): LmstfyState {
    if (this.state === undefined) throw new RqError('RQ_CONFIG', 'the lmstfy front door has no "protocols.lmstfy" section');
    return this.state;
  }

  /** Whether the queue is in a namespace that lmstfy closes with tokens. */
  isProtected(queue: string): boolean {
    const dot = queue.indexOf('.');
    if (this.state === undefined || !this.state.config.auth || dot < 0) return false;
    return this.state.tokens.hasAny(queue.slice(0, dot));
  }
}

/** Whether a door may touch a queue, by its name. */
export type QueueAccess = (queue: string) => boolean;

const PATTERNS_WANT = 'an array of queue name patterns (1 to 255 of A-Z a-z 0-9 _ . $ ( ) + -, and * for any run of characters)';

/** A door's `queues` key: patterns, as matchers; absent is none. */
const QUEUE_PATTERNS = v.optional(
  v.pipe(
    v.custom<string[]>((value) => Array.isArray(value) && value.every((p) => typeof p === 'string' && PATTERN.test(p)), PATTERNS_WANT),
    v.transform((patterns) => patterns.map((p) => new RegExp(`^${p.split('*').map(escapeRegExp).join('.*')}$`))),
  ),
  [],
);

/** A door's `queues` key as matchers; a bad value is an RQ_CONFIG error naming the key. */
export function parseQueuePatterns(door: string, value: unknown): RegExp[] {
  return parseConfigValue(QUEUE_PATTERNS, value, `protocols.${door}.queues`);
}

/** The door's access: a queue in no protected namespace, or one a pattern matches. */
export function doorAccess(namespaces: Namespaces, patterns: readonly RegExp[]): QueueAccess {
  return (queue) => !namespaces.isProtected(queue) || patterns.some((p) => p.test(queue));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.$()+]/g, '\\$&');
}
