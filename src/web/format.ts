/**
 * How pages print values from messages and replies: strings bare, anything else as its
 * JSON, and epoch seconds (a number or RQ's string) as a UTC time when they are one
 * (a `due` of 1e300 is shown as it is, not thrown on), and a state's retention limits.
 */
import type { RetentionLimits } from '../domain/retention.js';
import { rubyToF } from '../domain/ruby.js';
import { formatBytes } from '../lib/bytes.js';
import { localTimestamp } from '../lib/local-time.js';

/** A value as text: strings as they are, undefined as nothing, anything else as JSON. */
export function shown(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
}

/** `YYYY-MM-DD HH:MM:SS UTC` for epoch seconds, or undefined when the value is not a time. */
export function utcTime(value: unknown): string | undefined {
  const ms = rubyToF(value) * 1000;
  // Date's range is ±8.64e15 ms; anything outside (or not positive) is not a time.
  if (!Number.isFinite(ms) || ms <= 0 || ms > 8.64e15) return undefined;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** A state's retention limits as the queue page says them: `2 days, 60000 messages, 10.0 GiB`, or `no limit`. */
export function retentionText(limits: RetentionLimits): string {
  const parts: string[] = [];
  if (limits.max_age_days !== null) parts.push(`${limits.max_age_days} ${limits.max_age_days === 1 ? 'day' : 'days'}`);
  if (limits.max_count !== null) parts.push(`${limits.max_count} ${limits.max_count === 1 ? 'message' : 'messages'}`);
  if (limits.max_bytes !== null) parts.push(formatBytes(limits.max_bytes));
  return parts.length === 0 ? 'no limit' : parts.join(', ');
}

/** Epoch seconds as a UTC time, or the value as it is when it is not a time. */
export const formatEpoch = (value: unknown): string => utcTime(value) ?? shown(value === null ? undefined : value);

/** Epoch seconds in the server's local time, the time cron schedules are written in. */
const localTime = (sec: number | null): string => (sec === null ? '-' : localTimestamp(new Date(sec * 1000)));

/** What the queue views use besides their data. */
export const VIEW_HELPERS = { show: (v: unknown) => shown(v === null ? undefined : v), formatEpoch, localTime, formatBytes, retentionText };
