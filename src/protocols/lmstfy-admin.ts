/**
 * The lmstfy door's admin routes, served on the main listener:
 * - `/version`, `/info` and `/pools`, always open (they show no token and nothing of any
 *   namespace);
 * - `GET /metrics` (lmstfy-metrics.ts) and `GET /accesslog`, behind HTTP Basic auth
 *   against `accounts` when they are set, else open (they show names and counts, no
 *   token), as the web's `/metrics` is behind its `basic_auth`;
 * - the routes that show or change tokens and what goes with them, behind HTTP Basic
 *   auth against `accounts`: the token routes (`/token/:ns`, `/token/:ns/:token`), which
 *   list, add and remove a namespace's tokens (lmstfy-tokens.ts); the limiter routes
 *   (`/token/:ns/:token/limit`, `/limits`, lmstfy-limits.ts); and
 *   `POST /accesslog?status=enable|disable` (lmstfy-access-log.ts). Without accounts
 *   they are off (403), unless `auth` is false (the reference's dev mode), when they
 *   are open.
 */
import crypto from 'node:crypto';
import type http from 'node:http';
import { ulid } from 'ulid';
import { packageVersion } from '../lib/install-root.js';
import type { AccessLog } from './lmstfy-access-log.js';
import { readBytes, readForm } from './lmstfy-body.js';
import type { LmstfyConfig } from './lmstfy-config.js';
import { parseLimiter, type LimitTable } from './lmstfy-limits.js';
import type { LmstfyMetrics } from './lmstfy-metrics.js';
import { DEFAULT_POOL, splitPool, type TokenTable } from './lmstfy-tokens.js';
import { fail, isNamespace, isReply, LIMITS, type Reply } from './lmstfy-wire.js';

const ADMIN_OFF = fail(403, 'the admin routes are off: set "accounts" in protocols.lmstfy to use them (or "auth": false, for development only)');
/** A limiter's JSON body is a few dozen bytes. */
const LIMITER_BODY_BYTES = 4096;
const NO_LIMITER = fail(404, 'the limiter was not found');

/** What the admin routes show and change besides the config. */
export interface AdminState {
  tokens: TokenTable;
  limits: LimitTable;
  metrics: LmstfyMetrics;
  accessLog: AccessLog;
}

export class LmstfyAdmin {
  private readonly config: LmstfyConfig;
  private readonly state: AdminState;
  private readonly version = packageVersion();

  constructor(config: LmstfyConfig, state: AdminState) {
    this.config = config;
    this.state = state;
  }

  /** The reply to an admin route, or undefined when the method and path are none. */
  async serve(req: http.IncomingMessage, res: http.ServerResponse, segs: string[], query: URLSearchParams): Promise<Reply | undefined> {
    const m = req.method;
    const [first, ns, token] = segs;
    if (segs.length === 1) return this.serveTop(req, first!, query);
    if (first !== 'token' || ns === undefined) return undefined;
    if (segs.length === 4 && token !== undefined && segs[3] === 'limit') return this.serveLimit(req, res, ns, token);
    const isCreate = segs.length === 2 && m === 'POST';
    const isList = segs.length === 2 && m === 'GET';
    const isDelete = segs.length === 3 && m === 'DELETE' && token !== undefined;
    if (!isCreate && !isList && !isDelete) return undefined;
    const refused = this.adminRefusal(req);
    if (refused) return refused;
    if (isCreate) return this.mintToken(req, res, ns, query);
    const nsProblem = adminNamespaceProblem(ns);
    if (nsProblem) return nsProblem;
    if (isList) return { status: 200, body: { tokens: this.state.tokens.list(ns) } };
    const split = splitPool(token!);
    if (split.pool !== DEFAULT_POOL) return fail(400, 'the pool was not exists');
    this.state.tokens.remove(ns, split.token);
    this.state.limits.remove(ns, split.token);
    return { status: 204 };
  }

  /** `/version`, `/info`, `/pools`, `/metrics`, `/limits` and `/accesslog`. */
  private async serveTop(req: http.IncomingMessage, first: string, query: URLSearchParams): Promise<Reply | undefined> {
    const m = req.method;
    if (m === 'GET') {
      if (first === 'version') return { status: 200, body: { version: this.version, server: 'rq' } };
      if (first === 'pools') return { status: 200, body: { pools: [DEFAULT_POOL] } };
      if (first === 'info') return { status: 200, body: { version: this.version, pools: [DEFAULT_POOL], auth: this.config.auth } };
      if (first === 'metrics') return this.readRefusal(req) ?? { status: 200, raw: await this.state.metrics.render() };
      if (first === 'accesslog') return this.readRefusal(req) ?? this.accessLogStatus();
      if (first === 'limits') return this.adminRefusal(req) ?? { status: 200, body: this.state.limits.all() };
    }
    if (m === 'POST' && first === 'accesslog') {
      const refused = this.adminRefusal(req);
      if (refused) return refused;
      const status = query.get('status');
      if (status !== 'enable' && status !== 'disable') return fail(400, 'invalid status: give status=enable or status=disable');
      this.state.accessLog.enabled = status === 'enable';
      return this.accessLogStatus();
    }
    return undefined;
  }

  private accessLogStatus(): Reply {
    return { status: 200, body: { status: this.state.accessLog.enabled ? 'enabled' : 'disabled' } };
  }

  /** `GET/POST/PUT/DELETE /token/:ns/:token/limit`: a token's limiter. */
  private async serveLimit(req: http.IncomingMessage, res: http.ServerResponse, ns: string, given: string): Promise<Reply | undefined> {
    const m = req.method;
    if (m !== 'GET' && m !== 'POST' && m !== 'PUT' && m !== 'DELETE') return undefined;
    const refused = this.adminRefusal(req) ?? adminNamespaceProblem(ns);
    if (refused) return refused;
    const { pool, token } = splitPool(given);
    if (pool !== DEFAULT_POOL) return fail(400, 'the pool was not exists');
    const limits = this.state.limits;
    const current = limits.get(ns, token);
    if (m === 'GET') return current ? { status: 200, body: current } : NO_LIMITER;
    if (m === 'DELETE') {
      limits.remove(ns, token);
      return { status: 200, body: { msg: 'success' } };
    }
    const body = await readBytes(req, res, LIMITER_BODY_BYTES);
    if (isReply(body)) return body;
    const limiter = parseLimiter(body);
    if (isReply(limiter)) return limiter;
    if (this.config.auth && !this.state.tokens.has(ns, token)) return fail(404, 'token not found');
    if (m === 'POST' && current) return fail(400, 'the limiter has already existed');
    if (m === 'PUT' && !current) return NO_LIMITER;
    limits.set(ns, token, limiter);
    return { status: m === 'POST' ? 201 : 200, body: { limiter } };
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
    if (!this.state.tokens.add(ns, token, description)) return fail(400, 'the token has already existed');
    return { status: 201, body: { token } };
  }

  /**
   * The gate of the routes that show or change tokens: HTTP Basic auth against `accounts`
   * when configured; without them the routes are off, unless `auth` is false (dev mode,
   * where they are open).
   */
  private adminRefusal(req: http.IncomingMessage): Reply | undefined {
    const accounts = this.config.accounts;
    if (!accounts) return this.config.auth ? ADMIN_OFF : undefined;
    return basicRefusal(req, accounts);
  }

  /** The gate of `/metrics` and `GET /accesslog`: HTTP Basic auth when `accounts` are set, else open. */
  private readRefusal(req: http.IncomingMessage): Reply | undefined {
    const accounts = this.config.accounts;
    return accounts ? basicRefusal(req, accounts) : undefined;
  }
}

/** A 401 unless the request's HTTP Basic credentials are one of `accounts`. */
function basicRefusal(req: http.IncomingMessage, accounts: Record<string, string>): Reply | undefined {
  const unauthorized: Reply = { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="lmstfy admin"' } };
  const m = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  if (!m) return unauthorized;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const at = text.indexOf(':');
  if (at < 0) return unauthorized;
  const want = accounts[text.slice(0, at)];
  return want !== undefined && sameSecret(text.slice(at + 1), want) ? undefined : unauthorized;
}

/** The admin routes' namespace checks, in lmstfy's admin wording. */
function adminNamespaceProblem(ns: string): Reply | undefined {
  if (Buffer.byteLength(ns) > LIMITS.nameBytes) return fail(400, 'the namespace name was too long');
  if (!isNamespace(ns)) return fail(400, 'namespace name contains forbidden characters');
  return undefined;
}

function sameSecret(given: string, want: string): boolean {
  const h = (s: string): Buffer => crypto.createHash('sha256').update(s).digest();
  return crypto.timingSafeEqual(h(given), h(want));
}
