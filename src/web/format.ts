/**
 * How pages print values from messages and replies: strings bare, anything else as its
 * JSON, and epoch seconds (a number or RQ's string) as a UTC time when they are one
 * (a `due` of 1e300 is shown as it is, not thrown on).
 */
import { rubyToF } from '../domain/ruby.js';

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
