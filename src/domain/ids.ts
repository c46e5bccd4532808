/**
 * Message ids and their hashed placement (docs/layout.md).
 *
 * A short id is `YYYYMMDD.HHMM.SS.mmm.<inode>`: the UTC time of allocation and the inode
 * of the message directory, so two live messages never share an id. A full id is the
 * message URL `http://<host>:<port><relative_root>q/<queue>/<short id>`.
 */
export const SHORT_ID_RE = /^\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/;

/** The time part of a short id: `YYYYMMDD.HHMM.SS.mmm`, in UTC. */
export function idTimestamp(at: Date): string {
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  return (
    `${at.getUTCFullYear()}${p(at.getUTCMonth() + 1)}${p(at.getUTCDate())}.` +
    `${p(at.getUTCHours())}${p(at.getUTCMinutes())}.${p(at.getUTCSeconds())}.${p(at.getUTCMilliseconds(), 3)}`
  );
}

/** The UTC time a short id was allocated at, epoch ms (the inverse of idTimestamp); undefined for an id that is not a short id. */
export function idTimeMs(id: string): number | undefined {
  const m = /^(\d{4})(\d\d)(\d\d)\.(\d\d)(\d\d)\.(\d\d)\.(\d{3})\.\d+$/.exec(id);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]), Number(m[7])) : undefined;
}

export function isShortId(id: unknown): id is string {
  return typeof id === 'string' && SHORT_ID_RE.test(id);
}

/**
 * Whether a client-supplied id may be used as a directory name: no slash, no NUL, no
 * leading dot, at most 255 bytes (a longer name would make the
 * filesystem fail with ENAMETOOLONG). Lookups then only ever match an exact entry.
 */
export function isSafeId(id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && Buffer.byteLength(id) <= 255 && !/[/\0]/.test(id) && !id.startsWith('.');
}

/** `20261121.0527.42.578.2581651` → `['20261121','05','27']`, or undefined. */
export function hashParts(shortId: string): [string, string, string] | undefined {
  const m = /(\d{8})\.(\d\d)(\d\d)/.exec(shortId);
  return m ? [m[1]!, m[2]!, m[3]!] : undefined;
}

/** Split a full id with RQ's two patterns; a bare short id has no queue. */
export function parseFullId(fullId: string): { queue: string | undefined; shortId: string } {
  const queue = /\/q\/([^/]+)/.exec(fullId)?.[1];
  const shortId = /\/q\/[^/]+\/([^/]+)/.exec(fullId)?.[1];
  return { queue, shortId: shortId ?? fullId };
}

export interface HostInfo {
  host: string;
  port: string;
  /** Starts and ends with `/`. */
  relativeRoot: string;
}

/** `http://<host>:<port><relative_root>` — also `RQ_HOST`. */
export function hostUrl(h: HostInfo): string {
  return `http://${h.host}:${h.port}${h.relativeRoot}`;
}

export function fullId(h: HostInfo, queue: string, shortId: string): string {
  return `${hostUrl(h)}q/${queue}/${shortId}`;
}

/** Normalise `relative_root` to start with `/` and end with exactly one `/`. */
export function normaliseRelativeRoot(value: unknown): string {
  if (typeof value !== 'string' || value === '') return '/';
  return `/${value.replace(/^\/+/, '').replace(/\/+$/, '')}/`.replace(/^\/\/$/, '/');
}
