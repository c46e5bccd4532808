/**
 * The web's request pipeline and HTTP-layer rules (as RQ's web server had them), as express
 * middleware, in order: request id and security headers, allowed_ips, a browser's Host,
 * methods and POST headers, cross-site POSTs, the relative root, Basic auth, path
 * clean-up, the flash, and (after static files) the rq-mgr liveness check. Each step
 * answers on its own or passes on.
 */
import crypto from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { browserHostNames, type MainConfig } from '../domain/main-config.js';
import { isCrossSite, misdirectedReason } from '../lib/http-listener.js';
import { takeFlash } from './flash.js';
import type { Gateway } from './gateway.js';
import type { PageContext } from './render.js';
import { webError } from './web-errors.js';

/**
 * Scripts only from our own files. Style attributes are allowed for the ANSI colours
 * of the log tail (ansi-to-html writes `style="color:…"`, on text it has escaped).
 */
export const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'self'; form-action 'self'; base-uri 'none'";

/** The small HTML error documents of the HTTP layer, as RQ's, titled `<code> <text>`. */
function sendHttpError(res: Response, status: number, text: string, detail = ''): void {
  const title = `${status} ${text}`;
  const p = detail === '' ? '' : `<p>${detail}</p>`;
  res.status(status).type('text/html; charset=utf-8').send(`<!DOCTYPE html><html><head><title>${title}</title></head><body><h1>${title}</h1>${p}</body></html>\n`);
}

const REQUEST_ID_RE = /^[\w.:-]{1,128}$/;

/** X-Request-ID (the client's, when it is sane), security headers, one request per connection. */
export function baseHeaders(): RequestHandler {
  return (req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID_RE.test(given) ? given : crypto.randomUUID();
    res.locals['requestId'] = id;
    res.setHeader('X-Request-ID', id);
    res.setHeader('Connection', 'close');
    res.setHeader('Content-Security-Policy', CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'SAMEORIGIN');
    res.setHeader('Referrer-Policy', 'same-origin');
    next();
  };
}

/** `allowed_ips`: a client address must contain one of the strings, else 403. */
export function allowedIps(config: MainConfig): RequestHandler {
  return (req, res, next) => {
    const ips = config.allowedIps;
    const addr = req.socket.remoteAddress ?? '';
    if (ips && !ips.some((ip) => addr.includes(ip))) sendHttpError(res, 403, 'Forbidden');
    else next();
  };
}

/** GET and POST only (RQ answered other methods 500; rq: 405); a POST needs Content-Length and Content-Type (else 400, as in RQ). */
export function methodsAndHeaders(): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'POST') {
      res.setHeader('Allow', 'GET, POST');
      sendHttpError(res, 405, 'Method Not Allowed');
    } else if (req.method === 'POST' && req.headers['content-length'] === undefined) sendHttpError(res, 400, 'Bad Request no content-length');
    else if (req.method === 'POST' && req.headers['content-type'] === undefined) sendHttpError(res, 400, 'Bad Request no content-type');
    else next();
  };
}

/**
 * Beyond RQ: a request from a browser must call this server by one of its names
 * (browserHostNames: localhost, the configured `host` and `addr`, `allowed_hosts`), else
 * `421` and the reason as text. So a page of another site that points its own name at this
 * server (DNS rebinding) cannot drive it; curl, scripts and RQ's own clients send no
 * browser headers and may use any Host.
 */
export function allowedHost(config: MainConfig): RequestHandler {
  const names = browserHostNames(config);
  return (req, res, next) => {
    const reason = misdirectedReason(req, names);
    if (reason === undefined) next();
    else res.status(421).type('text/plain').send(`421 - ${reason}\n`);
  };
}

/**
 * Beyond RQ: a POST from another site's page is refused (403), so a link or form
 * elsewhere cannot make a logged-in browser create queues or delete messages. Browsers
 * say where a request comes from (`Sec-Fetch-Site`, `Origin`); curl, scripts and RQ's
 * own clients send neither and are not affected.
 */
export function sameOrigin(): RequestHandler {
  return (req, res, next) => {
    if (req.method === 'POST' && isCrossSite(req)) sendHttpError(res, 403, 'Forbidden', 'A POST from another site is refused.');
    else next();
  };
}

/** A regexp for the path under `relative_root`: each `/` of the prefix matches one or more. */
export function rootMatcher(relativeRoot: string): RegExp {
  const segs = relativeRoot.split('/').filter(Boolean);
  const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${segs.map((s) => `/+${esc(s)}`).join('')}(/.*)?$`);
}

/** RQ's path clean-up: decode %2e and %2f, drop empty and `.` segments, apply `..`, keep a trailing `/`. */
export function cleanPath(p: string): string {
  const decoded = p.replace(/%2e/gi, '.').replace(/%2f/gi, '/');
  const out: string[] = [];
  for (const seg of decoded.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') out.pop();
    else out.push(seg);
  }
  const trailing = decoded.endsWith('/') && out.length > 0;
  return `/${out.join('/')}${trailing ? '/' : ''}`;
}

/** Strip the relative root (404 `Not Found: <path>` outside it) and clean the rest. */
export function relativeRoot(config: MainConfig): RequestHandler {
  const re = rootMatcher(config.relativeRoot);
  return (req, res, next) => {
    // An absolute URI in the request line (`GET http://host/path`): scheme and host are dropped.
    if (/^https?:\/\//i.test(req.url)) req.url = req.url.replace(/^https?:\/\/[^/?#]*/i, '') || '/';
    const q = req.url.indexOf('?');
    const pathname = q < 0 ? req.url : req.url.slice(0, q);
    const search = q < 0 ? '' : req.url.slice(q);
    const m = re.exec(pathname);
    if (!m) {
      res.status(404).type('text/plain').send(`Not Found: ${pathname}`);
      return;
    }
    req.url = cleanPath(m[1] ?? '/') + search;
    next();
  };
}

/** HTTP Basic auth from `basic_auth` (config/config.json), on everything under the root, static files too. */
export function basicAuth(config: MainConfig): RequestHandler {
  return (req, res, next) => {
    const auth = config.basicAuth;
    if (!auth) {
      next();
      return;
    }
    const m = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    const decoded = m ? Buffer.from(m[1]!, 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const user = decoded.slice(0, colon);
    const given = Buffer.from(decoded.slice(colon + 1));
    const want = colon >= 0 && Object.hasOwn(auth.users, user) ? Buffer.from(auth.users[user]!) : undefined;
    if (want && want.length === given.length && crypto.timingSafeEqual(want, given)) {
      // Who asked, for the log lines that name them (bulk-jobs.ts).
      res.locals['user'] = user;
      next();
      return;
    }
    res.status(401).setHeader('WWW-Authenticate', `Basic realm="${auth.realm.replace(/["\\]/g, '')}"`);
    res.end();
  };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The page context every view gets, with the flash taken out of the cookie (it shows on this response only). */
export function pageSetup(config: MainConfig): RequestHandler {
  return (req, res, next) => {
    const page: PageContext = { root: config.relativeRoot, env: config.env ?? '', flash: takeFlash(req, res, config.relativeRoot) };
    const name = req.path.startsWith('/q/') ? req.path.split('/')[2] : undefined;
    if (name) page.queue = safeDecode(name).replace(/\.(json|txt)$/, '');
    res.locals['page'] = page;
    next();
  };
}

/** As RQ: `503 - QueueMgr not running` when rq-mgr's pid is not alive; else its pid for the route (mgrPidOf). */
export function requireMgr(gw: Gateway): RequestHandler {
  return (_req: Request, res: Response, next: NextFunction) => {
    const pid = gw.mgrPid();
    if (pid === undefined) {
      next(webError('RQ_QUEUE_DOWN', 'QueueMgr not running'));
      return;
    }
    res.locals['mgrPid'] = pid;
    next();
  };
}

/** rq-mgr's pid as requireMgr found it. */
export function mgrPidOf(res: Response): number {
  return res.locals['mgrPid'] as number;
}
