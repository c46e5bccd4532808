/**
 * The flash message: one notice and/or one error carried across the redirect after a
 * POST in a signed, HttpOnly cookie. The signing key is made
 * per web process, so a flash set just before a web restart is simply dropped. A
 * tampered or unreadable cookie is ignored.
 */
import crypto from 'node:crypto';
import type { Request, Response } from 'express';

export interface Flash {
  notice?: string;
  error?: string;
}

const COOKIE = 'rq.flash';
const KEY = crypto.randomBytes(32);

function sign(value: string): string {
  return crypto.createHmac('sha256', KEY).update(value).digest('base64url');
}

function cookieValue(req: Request): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Take the pending flash out of the request (it shows on this response only). */
export function takeFlash(req: Request, res: Response, cookiePath: string): Flash {
  const raw = cookieValue(req);
  if (raw === undefined) return {};
  res.append('Set-Cookie', `${COOKIE}=; Path=${cookiePath}; HttpOnly; SameSite=Lax; Max-Age=0`);
  const [body, mac] = raw.split('.');
  if (!body || !mac) return {};
  const expected = Buffer.from(sign(body));
  const given = Buffer.from(mac);
  if (expected.length !== given.length || !crypto.timingSafeEqual(expected, given)) return {};
  try {
    const v = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Flash;
    return {
      ...(typeof v.notice === 'string' ? { notice: v.notice } : {}),
      ...(typeof v.error === 'string' ? { error: v.error } : {}),
    };
  } catch {
    return {};
  }
}

/** Set the flash for the next request (replacing any `Set-Cookie` that cleared it). */
export function setFlash(res: Response, flash: Flash, cookiePath: string): void {
  const body = Buffer.from(JSON.stringify(flash)).toString('base64url');
  res.setHeader('Set-Cookie', `${COOKIE}=${body}.${sign(body)}; Path=${cookiePath}; HttpOnly; SameSite=Lax`);
}
