/**
 * The worker side of RQ's pipe protocol (docs/scripts.md, "The pipe protocol"), for rq's own queue scripts
 * written in Node (relay, webhook, cleaner, router). A worker runs with cwd `job/` of its
 * message: it reports lines on fd 3, reads the replies to two-way requests (`dup`) on
 * fd 4, logs to stdout (appended to `job/stdio.log`) in RQ's coloured format, and reads
 * its message from `../msg`; its HTTP requests go through `exchange`. Lines go out on fd 3 with synchronous writes (fd 3 is
 * blocking in the child, and a line is out before the worker goes on); a reply on fd 4 is
 * awaited without blocking the event loop (`requestAsync`). It also holds what RQ's relay
 * and webhook scripts share: the RQ_COUNT limit and the count² backoff of a resend.
 */
import fs from 'node:fs';
import net from 'node:net';
import readline from 'node:readline';
import { RqError, explain } from '../domain/errors.js';
import { localTimestamp } from '../lib/local-time.js';

/** One protocol line on fd 3 (a newline inside `text` would start a second line). */
export function report(line: string): void {
  fs.writeSync(3, `${line.replace(/[\r\n]+/g, ' ')}\n`);
}

/** `ESC[0;36m<pid> - <time>ESC[0m - <text>` on stdout, the line format of RQ's own scripts. */
export function log(text: string): void {
  fs.writeSync(1, `\x1b[0;36m${process.pid} - ${localTimestamp(new Date())}\x1b[0m - ${text}\n`);
}

/** An `RQ_*` variable of the run (its environment: docs/scripts.md, "Environment"), or '' when unset. */
export function rqEnv(name: string): string {
  return process.env[`RQ_${name}`] ?? '';
}

/** The message being run, from `../msg` (the worker's cwd is the message's `job/`). */
export function readOwnMessage(): Record<string, unknown> {
  return JSON.parse(fs.readFileSync('../msg', 'utf8')) as Record<string, unknown>;
}

/**
 * A number of seconds from a variable the queue's `env_vars` may set (e.g.
 * `WEBHOOK_BACKOFF_SECS`); unset or empty is `fallback`. Anything but a number ≥ 0 is an
 * RqError `RQ_CONFIG` that names the variable.
 */
export function secondsFromEnv(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new RqError('RQ_CONFIG', `${name} must be a number of seconds, 0 or more, got ${JSON.stringify(value)}`);
  return n;
}

/** RQ's limit in its relay and webhook scripts: a message resent more often than this (`RQ_COUNT` > 15) fails. */
export const MAX_COUNT = 15;

/** The progress line those scripts write before they fail a message past MAX_COUNT (each then writes its own `fail …`). */
export const PAST_MAX_COUNT_LINE = `run RQ_COUNT > ${MAX_COUNT} - failing`;

/**
 * RQ's soft fail of those scripts: `resend <count² × baseSecs>-<reason>`, so the tries of
 * a message come after 0, 1, 4, 9… × baseSecs seconds (`count` is `RQ_COUNT`).
 */
export function resendLine(count: number, baseSecs: number, reason: string): string {
  return `resend ${Math.round(count * count * baseSecs)}-${reason}`;
}

/**
 * An HTTP exchange: the reply (its status, status text, body, and the body parsed when it
 * is JSON), or why there was none (network error, bad URL, or no answer in time).
 */
export type Exchange =
  | { type: 'reply'; status: number; statusText: string; text: string; json: unknown }
  | { type: 'unreachable'; url: string; why: string };

/** One HTTP request of rq's workers (relay, webhook): a time limit, redirects not followed. */
export async function exchange(url: string, init: RequestInit, timeoutMs: number): Promise<Exchange> {
  try {
    const res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { type: 'reply', status: res.status, statusText: res.statusText, text, json };
  } catch (e) {
    const timedOut = e instanceof DOMException && e.name === 'TimeoutError';
    return { type: 'unreachable', url, why: timedOut ? `no answer within ${timeoutMs / 1000} s` : explain(e).replaceAll('\n', ': ') };
  }
}

/** `report` a line and `log` it too, as RQ's own scripts did with every status line. */
export function say(line: string): void {
  log(line);
  report(line);
}

let replies: { socket: net.Socket; lines: AsyncIterator<string> } | undefined;

/**
 * A two-way request such as `dup 0-X-<dest>`: the reply line read back from fd 4. It is
 * awaited without blocking the event loop, so a timer can still end the worker meanwhile
 * (the router's 60 s limit). fd 4 is read through a socket (non-blocking: only this
 * process has this end), which holds the process open only while a reply is awaited.
 */
export async function requestAsync(line: string): Promise<string> {
  if (!replies) {
    const socket = new net.Socket({ fd: 4, readable: true, writable: false });
    replies = { socket, lines: readline.createInterface({ input: socket, crlfDelay: Infinity })[Symbol.asyncIterator]() };
  }
  report(line);
  replies.socket.ref();
  try {
    const next = await replies.lines.next();
    return next.done ? '' : next.value;
  } finally {
    replies.socket.unref();
  }
}
