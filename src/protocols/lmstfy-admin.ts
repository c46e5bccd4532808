/**
 * The lmstfy door's admin routes (§6): `/version`, `/info` and `/pools`, always open (they
 * show no token and nothing of any namespace), and the token routes (`/token/:ns`), which
 * list, add and remove a namespace's tokens (lmstfy-tokens.ts) behind HTTP Basic auth
 * against `accounts`. Without accounts the token routes are off (403), unless `auth` is
 * false (the reference's dev mode), when they are open.
 */
import crypto from 'node:crypto';
import type http from 'node:http';
import { ulid } from 'ulid';
import { packageVersion } from '../lib/install-root.js';
import { readForm } from './lmstfy-body.js';
import type { LmstfyConfig } from './lmstfy-config.js';
import { DEFAULT_POOL, splitPool, type TokenTable } from './lmstfy-tokens.js';
import { fail, isNamespace, isReply, LIMITS, type Reply } from './lmstfy-wire.js';

const ADMIN_OFF = fail(403, 'the token routes are off: set "accounts" in protocols.lmstfy to use them (or "auth": false, for development only)');

export class LmstfyAdmin {
  private readonly config: LmstfyConfig;
  private readonly tokens: TokenTable;
  private readonly version = packageVersion();

  constructor(config: LmstfyConfig, tokens: TokenTable) {
    this.config = config;
    this.tokens = tokens;
  }

  /** The reply to an admin route, or undefined when the method and path are none. */
  async serve(req: http.IncomingMessage, res: http.ServerResponse, segs: string[], query: URLSearchParams): Promise<Reply | undefined> {
    const m = req.method;
    const [first, ns, token] = segs;
    if (segs.length === 1 && m === 'GET') {
      if (first === 'version') return { status: 200, body: { version: this.version, server: 'rq' } };
      if (first === 'pools') return { status: 200, body: { pools: [DEFAULT_POOL] } };
      if (first === 'info') return { status: 200, body: { version: this.version, pools: [DEFAULT_POOL], auth: this.config.auth } };
    }
    if (first !== 'token' || ns === undefined) return undefined;
    const isCreate = segs.length === 2 && m === 'POST';
    const isList = segs.length === 2 && m === 'GET';
    const isDelete = segs.length === 3 && m === 'DELETE' && token !== undefined;
    if (!isCreate && !isList && !isDelete) return undefined;
    const refused = this.adminRefusal(req);
    if (refused) return refused;
    if (isCreate) return this.mintToken(req, res, ns, query);
    const nsProblem = adminNamespaceProblem(ns);
    if (nsProblem) return nsProblem;
    if (isList) return { status: 200, body: { tokens: this.tokens.list(ns) } };
    const split = splitPool(token!);
    if (split.pool !== DEFAULT_POOL) return fail(400, 'the pool was not exists');
    this.tokens.remove(ns, split.token);
    return { status: 204 };
  }

  /** `POST /token/:ns` with `description`, optional `token` (custom, ≥ 20 characters) and `pool`, from the form or the query. */
  private async mintToken(req: http.IncomingMessage, res: http.ServerResponse, ns: string, query: URLSearchParams): Promise<Reply> {
    const form = await readForm(req, res);
    if (isReply(form)) return form;
    const field = (key: string): string => form.get(key) || query.get(key) || '';
    const description = field('description');
    if (description === '') return fail(400, 'invalid description');
    const custom = field('token');
    if (custom !== '' && custom.length < 20) return fail(400, 'the user token was too short');
    const nsProblem = adminNamespaceProblem(ns);
    if (nsProblem) return nsProblem;
    let pool = field('pool') || DEFAULT_POOL;
    let token = custom;
    if (custom.includes(':')) ({ pool, token } = splitPool(custom));
    if (pool !== DEFAULT_POOL) return fail(400, 'the pool was not exists');
    if (token === '') token = ulid();
    if (!this.tokens.add(ns, token, description)) return fail(400, 'the token has already existed');
    return { status: 201, body: { token } };
  }

  /**
   * The token routes' gate: HTTP Basic auth against `accounts` when configured; without
   * them the routes are off, unless `auth` is false (dev mode, where they are open).
   */
  private adminRefusal(req: http.IncomingMessage): Reply | undefined {
    const accounts = this.config.accounts;
    if (!accounts) return this.config.auth ? ADMIN_OFF : undefined;
    const unauthorized: Reply = { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="lmstfy admin"' } };
    const m = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m) return unauthorized;
    const text = Buffer.from(m[1]!, 'base64').toString('utf8');
    const at = text.indexOf(':');
    if (at < 0) return unauthorized;
    const want = accounts[text.slice(0, at)];
    return want !== undefined && sameSecret(text.slice(at + 1), want) ? undefined : unauthorized;
  }
}

/** The admin routes' namespace checks (§6 wording). */
function adminNamespaceProblem(ns: string): Reply | undefined {
  if (Buffer.byteLength(ns) > LIMITS.nameBytes) return fail(400, 'the namespace name was too long');
  if (!isNamespace(ns)) return fail(400, 'namespace name contains forbidden characters');
  return undefined;
}

function sameSecret(given: string, want: string): boolean {
  const h = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();
  return crypto.timingSafeEqual(h(given), h(want));
}
