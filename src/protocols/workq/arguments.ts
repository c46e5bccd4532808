/**
 * The grammar of a Workq argument's value: integers, UUIDs, names and
 * times, each read to a value or to undefined when it is not one. What the value may be
 * (a range, a profile) is the command table's (requests.ts). Where the Workq protocol leaves room,
 * this is what we decided:
 * - Integers follow Go's strconv: ParseUint (digits only, leading zeros fine, no sign) for
 *   ttr, ttl, wait-timeout, max-attempts, max-fails, cursor offset and limit; ParseInt (an
 *   optional `+` or `-`) for priority and for the block size, which Workq describes as a
 *   decimal integer that may be negative (so `+4` and `-0` are sizes). A digit string too
 *   long for its type is the same error as any other bad value.
 * - `<time>`: exactly `YYYY-MM-DDTHH:MM:SS`, then optionally `.` and one or more digits (kept to
 *   the nanosecond, further digits dropped, as Go does), then `Z`. Fields out of range and
 *   dates that do not exist (month 13, Feb 30) are `Invalid Time`.
 * - Names: `[A-Za-z0-9_.-]{1,255}`, and also names.ts's rule that an rq queue name does not
 *   start with `.` nor end in `.deleted.<digits>` (rq cannot hold such a queue): `Invalid Name`.
 */
import { isProtocolQueueName } from '../../domain/names.js';

/** Workq's integer limits. */
export const UINT8 = 255;
export const UINT32 = 4_294_967_295;
const UINT64 = 18_446_744_073_709_551_615n;
export const INT32_MIN = -2_147_483_648;
export const INT32_MAX = 2_147_483_647;

const DIGITS = /^\d+$/;
const SIGNED_DIGITS = /^[+-]?\d+$/;

/** Go's strconv.ParseUint(text, 10, ·) within 0..max. */
export function parseUint(text: string, max: number): number | undefined {
  if (!DIGITS.test(text)) return undefined;
  const n = Number(text);
  return n <= max ? n : undefined;
}

/** Go's strconv.ParseInt(text, 10, ·) within min..max. */
export function parseInt(text: string, min: number, max: number): number | undefined {
  if (!SIGNED_DIGITS.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n + 0 : undefined; // `+ 0` turns `-0` into 0
}

/** Go's strconv.ParseUint(text, 10, 64). */
export function parseUint64(text: string): bigint | undefined {
  if (!DIGITS.test(text)) return undefined;
  const digits = text.replace(/^0+(?=\d)/, '');
  if (digits.length > 20) return undefined; // before BigInt, which is slow on huge strings
  const n = BigInt(digits);
  return n <= UINT64 ? n : undefined;
}

const UUID_36 = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UUID_32 = /^[0-9a-f]{32}$/i;
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** A UUID in one of the forms Go's uuid.Parse reads, as lower-case 8-4-4-4-12; nil is returned too (it parses). */
export function parseUuid(text: string): string | undefined {
  let canonical: string;
  if (text.length === 38 && text.startsWith('{') && text.endsWith('}')) canonical = text.slice(1, -1);
  else if (text.length === 45 && text.slice(0, 9).toLowerCase() === 'urn:uuid:') canonical = text.slice(9);
  else if (UUID_32.test(text)) {
    canonical = `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
  } else canonical = text;
  return UUID_36.test(canonical) ? canonical.toLowerCase() : undefined;
}

/** Version 4 with the RFC 4122 variant (`10xx` in the clock-seq's top bits), of a lower-case canonical id. */
const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab]/;
export const isV4 = (id: string): boolean => V4.test(id);

const WORKQ_NAME = /^[A-Za-z0-9_.-]{1,255}$/;

/** Workq's name rule, plus rq's: no leading `.`, no `.deleted.<digits>` suffix (names.ts). */
export const isWorkqName = (name: string): boolean => WORKQ_NAME.test(name) && isProtocolQueueName(name);

const TIME = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$/;

/** `<time>` as epoch ms, fractional below the millisecond (`.5005Z` → …500.5), or undefined. */
export function parseTime(text: string): number | undefined {
  const m = TIME.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // setUTCFullYear, not Date.UTC, which maps years 0..99 to 1900..1999
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return undefined;
  date.setUTCHours(hour, minute, second);
  const fraction = (m[7] ?? '').slice(0, 9).padEnd(9, '0');
  return date.getTime() + Number(`${fraction.slice(0, 3)}.${fraction.slice(3)}`);
}

/** A command line's flags, by key. */
export type Flags = ReadonlyMap<string, string>;

/** A flag's value read by `parse`: 0 (the default of every Workq flag) when absent, undefined when bad. */
export function optionalFlag(flags: Flags, key: string, parse: (text: string) => number | undefined): number | undefined {
  const text = flags.get(key);
  return text === undefined ? 0 : parse(text);
}
