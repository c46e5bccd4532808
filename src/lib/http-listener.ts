/**
 * What every HTTP listener of rq shares (the web and the HTTP front doors): the server,
 * built with header and request timeouts that Node really enforces, and the rules for
 * requests that come from a browser.
 *
 * A request comes from a browser when it carries an `Origin`, a `Cookie`, a `Sec-Fetch-*`
 * header, a browser's `User-Agent` (`Mozilla/…`) or an `Accept-Language` other than `*`;
 * curl, scripts and RQ's own clients send none of them, and may call a listener by any
 * name. (Browsers send `Sec-Fetch-*` only to https and localhost URLs, and `Origin` on
 * POSTs and cross-origin requests, so a same-origin GET over plain HTTP may carry only the
 * User-Agent and the Accept-Language; a page may change the User-Agent in Firefox, but not
 * drop the Accept-Language. Node's fetch sends `Sec-Fetch-Mode` and `Accept-Language: *`,
 * which browsers never do alone; those do not count, so rq's own relay and Node clients
 * are not taken for browsers.)
 *
 * A browser's request must name one of the listener's own host names in its `Host`
 * header, else it is misdirected (421): so a page of another site whose name the
 * attacker points at 127.0.0.1 (DNS rebinding), which the browser counts as the same
 * origin as that page, cannot use the listener. A request is cross-site when the browser
 * says it comes from another site's page (`Sec-Fetch-Site`), or sends an `Origin` that is
 * not the request's own host; the web refuses cross-site POSTs. The front doors serve no
 * pages, so they refuse every browser request that the browser does not mark as its
 * user's own (`Sec-Fetch-Site: none`) or as coming from the door itself: an image on
 * another site's page, sent over plain HTTP to a name of this host, carries neither mark.
 */
import http from 'node:http';

/**
 * Node looks for connections past their header or request timeout this often (its default
 * is 30 s, so a 5 s head timeout closed slow connections only after up to 35 s).
 */
const CHECK_INTERVAL_MS = 1_000;

export interface HttpTimeouts {
  /** The request head must have arrived this long after the connection opened (or the previous request ended), else 408 and close. */
  headersTimeoutMs: number;
  /** The whole request, body included, within this (a reply that takes longer, such as a long poll, is not limited by it). */
  requestTimeoutMs: number;
}

/** An HTTP server whose timeouts are checked every CHECK_INTERVAL_MS, so a slow head is closed within its timeout and a second more. */
export function createHttpServer(listener: http.RequestListener, timeouts: HttpTimeouts): http.Server {
  return http.createServer(
    { headersTimeout: timeouts.headersTimeoutMs, requestTimeout: timeouts.requestTimeoutMs, connectionsCheckingInterval: CHECK_INTERVAL_MS },
    listener,
  );
}

/** Whether a browser sent the request (see the file comment). */
function isFromBrowser(req: http.IncomingMessage): boolean {
  const { origin, cookie } = req.headers;
  if (origin !== undefined || cookie !== undefined || req.headers['user-agent']?.startsWith('Mozilla/')) return true;
  const language = req.headers['accept-language'];
  if (language !== undefined && language.trim() !== '*') return true;
  return Object.keys(req.headers).some((h) => h.startsWith('sec-fetch-') && h !== 'sec-fetch-mode');
}

/** The host name of a `Host` header, lower case and without the port (`[::1]:3333` → `[::1]`). */
function hostName(host: string): string {
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) || host : host.replace(/:\d*$/, '');
  return name.toLowerCase();
}

/**
 * The one-line reason a browser's request is misdirected (its Host is none of `names`,
 * which are lower case, without port, an IPv6 address in brackets), or undefined.
 */
export function misdirectedReason(req: http.IncomingMessage, names: ReadonlySet<string>): string | undefined {
  if (!isFromBrowser(req)) return undefined;
  const host = req.headers.host;
  if (host === undefined) return 'Misdirected request: a browser request without a Host header';
  const name = hostName(host);
  if (names.has(name)) return undefined;
  return `Misdirected request: this server is not called ${JSON.stringify(name)} (add the name to allowed_hosts in config.json)`;
}

/** Whether the browser says the request comes from another site's page. */
export function isCrossSite(req: http.IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = req.headers.origin;
  if (origin === undefined) return false;
  try {
    return new URL(origin).host !== (req.headers.host ?? '').toLowerCase();
  } catch {
    return true; // `Origin: null` (a sandboxed page, a redirect across sites) or garbage
  }
}

/** Whether the browser marks the request as its user's own or same-origin (and not cross-site). */
function isMarkedOwn(req: http.IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  return !isCrossSite(req) && (site === 'same-origin' || site === 'none' || req.headers.origin !== undefined);
}

/** A refusal of a front door's HTTP listener: the status and a one-line reason, in the door's own reply format. */
export interface BrowserRefusal {
  status: 421 | 403;
  reason: string;
}

/**
 * The refusal of a request by the rules of the HTTP front doors, or undefined: a
 * misdirected browser request (421), then a browser request of any method not marked as
 * its user's own or same-origin (403), since even a GET reserves or locks jobs there.
 */
export function browserRefusal(req: http.IncomingMessage, names: ReadonlySet<string>): BrowserRefusal | undefined {
  const misdirected = misdirectedReason(req, names);
  if (misdirected !== undefined) return { status: 421, reason: misdirected };
  if (isFromBrowser(req) && !isMarkedOwn(req)) return { status: 403, reason: 'Forbidden: a request from another site is refused' };
  return undefined;
}
