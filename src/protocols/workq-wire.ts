/**
 * The Workq wire codec (spec/workq.md §1–§5, §9, §10): an incremental decoder that turns one
 * connection's bytes into requests or the error reply to send, and the encoders of the §2
 * replies. It owns the framing (command lines, flags, data blocks, the reference's error
 * recovery and size cap) and every argument check of §3–§5, in the spec's order. It does no
 * I/O and keeps no queue state: workq.ts feeds it socket bytes and runs what comes out. The
 * checks that need the store (Duplicate job, Duplicate result, NOT-FOUND) are the server's.
 *
 * Where the spec leaves room, this is what we decided:
 * - Order of the line checks: command name (`Unknown command`), then flag syntax
 *   (`Invalid command flags`), then the positional count (`Invalid command args`), then the
 *   size (`Invalid payload size` / `Invalid result size`). These are §1's "parser" checks:
 *   when one fails, the block is left unread and its bytes are read as the next line.
 * - Flag *counts* (more than 3 on add/schedule, more than 1 on run, any flag on complete and
 *   fail) are checked after the block was read, so the block is consumed. §5.1 puts "more than
 *   3 flags" in step 2, after step 1's "size and block", and §1's recovery list names only the
 *   argument count, the flag syntax and the size; complete and fail get the same treatment.
 * - Integers follow Go's strconv: ParseUint (digits only, leading zeros fine, no sign) for
 *   ttr, ttl, wait-timeout, max-attempts, max-fails, cursor offset and limit; ParseInt (an
 *   optional `+` or `-`) for priority and for the block size, which §1/§3 describe as "a
 *   decimal integer" that may be "negative" (so `+4` and `-0` are sizes). A digit string too
 *   long for its type is the same error as any other bad value.
 * - Size cap: a command line (with its CR LF) plus its block's bytes may not exceed
 *   1,058,576 bytes (10,000 of line plus 1 MiB); past that, or when that many bytes arrive
 *   with no LF, the connection is closed without reply.
 * - `<time>`: exactly `YYYY-MM-DDTHH:MM:SS`, then optionally `.` and one or more digits (kept to
 *   the nanosecond, further digits dropped, as Go does), then `Z`. Fields out of range and
 *   dates that do not exist (month 13, Feb 30) are `Invalid Time`.
 * - The nil UUID is refused everywhere (§4), `delete` and `inspect job` included.
 * - Names: `[A-Za-z0-9_.-]{1,255}`, and also names.ts's rule that an rq queue name does not
 *   start with `.` nor end in `.deleted.<digits>` (rq cannot hold such a queue): `Invalid Name`.
 * - "In the future" checks use Date.now() when the command is decoded.
 * - A command line that is an HTTP request line (`POST / HTTP/1.1`) or a `Host:` header
 *   closes the connection, as Redis does: a browser that a page of another site sends to
 *   this port (a form POST, or DNS rebinding) can carry Workq commands in its body, and no
 *   Workq command line looks like either. Data blocks are not command lines.
 */
import { isProtocolQueueName } from '../domain/names.js';

export interface WireOptions {
  /** §4 profile: only version-4 RFC 4122 UUIDs (the reference); default false = any well-formed non-nil UUID. */
  strictUuidV4: boolean;
  /** §4 profile: TTL capped at 2,592,000,000 ms (the reference); default false = any uint64 >= 1. */
  strictTtlCap: boolean;
}

export type InspectRequest =
  | { cmd: 'inspect'; what: 'server' }
  | { cmd: 'inspect'; what: 'queues'; offset: number; limit: number }
  | { cmd: 'inspect'; what: 'queue'; name: string }
  | { cmd: 'inspect'; what: 'jobs' | 'scheduled-jobs'; name: string; offset: number; limit: number }
  | { cmd: 'inspect'; what: 'job'; id: string };

export type WorkqRequest =
  | { cmd: 'add'; id: string; name: string; ttrMs: number; ttl: bigint; payload: Buffer; priority: number; maxAttempts: number; maxFails: number }
  | { cmd: 'schedule'; id: string; name: string; ttrMs: number; ttl: bigint; timeMs: number; payload: Buffer; priority: number; maxAttempts: number; maxFails: number }
  | { cmd: 'run'; id: string; name: string; ttrMs: number; waitMs: number; payload: Buffer; priority: number }
  | { cmd: 'result'; id: string; waitMs: number }
  | { cmd: 'lease'; names: string[]; waitMs: number }
  | { cmd: 'complete' | 'fail'; id: string; result: Buffer }
  | { cmd: 'delete'; id: string; /** strictUuidV4 and a parsable non-v4 id: answer +OK and delete nothing (§5.7). */ ignore: boolean }
  | InspectRequest;

/** What the decoder produced, in stream order. */
export type Decoded =
  | { request: WorkqRequest }
  /** An error reply to write as it is (e.g. `-CLIENT-ERROR Invalid ID\r\n`): the command failed a check. */
  | { reply: Buffer }
  /**
   * A framing violation (§1: bare LF, over-size command), or a command line that is HTTP
   * (`http`): close the connection without replying. Nothing is decoded after it.
   */
  | { close: true; http?: true };

const CR = 0x0d;
const LF = 0x0a;
const CRLF = Buffer.from('\r\n');

/** §1: the largest block, and the largest command (10,000 bytes of line plus 1 MiB). */
const MAX_BLOCK = 1_048_576;
const MAX_COMMAND = 1_058_576;
/** §4's limits. */
const MAX_TTR_MS = 86_400_000;
const MAX_WAIT_MS = 86_400_000;
const STRICT_TTL_CAP = 2_592_000_000n;
const UINT8 = 255;
const UINT32 = 4_294_967_295;
const UINT64 = 18_446_744_073_709_551_615n;
const INT32_MIN = -2_147_483_648;
const INT32_MAX = 2_147_483_647;
const MAX_LIMIT = 100;

/** §3's texts, as the decoder raises them. */
const E = {
  unknown: 'Unknown command',
  args: 'Invalid command args',
  flags: 'Invalid command flags',
  payloadSize: 'Invalid payload size',
  resultSize: 'Invalid result size',
  id: 'Invalid ID',
  name: 'Invalid Name',
  ttr: 'Invalid TTR',
  ttl: 'Invalid TTL',
  time: 'Invalid Time',
  maxAttempts: 'Invalid Max Attempts',
  maxFails: 'Invalid Max Fails',
  priority: 'Invalid Priority',
  wait: 'Invalid wait timeout',
  offset: 'Invalid cursor offset',
  limit: 'Invalid limit',
} as const;

// ---------------------------------------------------------------------------------------
// Replies (§2)

export const OK = Buffer.from('+OK\r\n');
export const TIMEOUT = Buffer.from('-TIMEOUT\r\n');
export const NOT_FOUND = Buffer.from('-NOT-FOUND\r\n');

export function clientError(text: string): Buffer {
  return Buffer.from(`-CLIENT-ERROR ${text}\r\n`);
}

export function serverError(text: string): Buffer {
  return Buffer.from(`-SERVER-ERROR ${text}\r\n`);
}

/** `+OK 1\r\n<id> <name> <ttr> <payload-size>\r\n<payload>\r\n`. */
export function leaseReply(id: string, name: string, ttrMs: number, payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`+OK 1\r\n${id} ${name} ${ttrMs} ${payload.length}\r\n`), payload, CRLF]);
}

/** `+OK 1\r\n<id> <1|0> <result-size>\r\n<result>\r\n`. */
export function resultReply(id: string, success: boolean, result: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`+OK 1\r\n${id} ${success ? 1 : 0} ${result.length}\r\n`), result, CRLF]);
}

/** +OK <n>\r\n then per record `<label> <key-count>\r\n` and `<key> <value>\r\n` lines (a Buffer value is written raw). */
export function inspectReply(records: ReadonlyArray<{ label: string; pairs: ReadonlyArray<readonly [string, string | number | Buffer]> }>): Buffer {
  const parts: Buffer[] = [Buffer.from(`+OK ${records.length}\r\n`)];
  for (const { label, pairs } of records) {
    parts.push(Buffer.from(`${label} ${pairs.length}\r\n`));
    for (const [key, value] of pairs) {
      if (Buffer.isBuffer(value)) parts.push(Buffer.from(`${key} `), value, CRLF);
      else parts.push(Buffer.from(`${key} ${value}\r\n`));
    }
  }
  return Buffer.concat(parts);
}

/** `YYYY-MM-DDTHH:MM:SSZ` of an epoch-ms instant (whole seconds, UTC), for `created`, `time`, `started`. */
export function workqTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

// ---------------------------------------------------------------------------------------
// Arguments (§4)

const DIGITS = /^\d+$/;
const SIGNED_DIGITS = /^[+-]?\d+$/;

/** Go's strconv.ParseUint(text, 10, ·) within 0..max. */
function parseUint(text: string, max: number): number | undefined {
  if (!DIGITS.test(text)) return undefined;
  const n = Number(text);
  return n <= max ? n : undefined;
}

/** Go's strconv.ParseInt(text, 10, ·) within min..max. */
function parseInt(text: string, min: number, max: number): number | undefined {
  if (!SIGNED_DIGITS.test(text)) return undefined;
  const n = Number(text);
  return n >= min && n <= max ? n + 0 : undefined; // `+ 0` turns `-0` into 0
}

/** Go's strconv.ParseUint(text, 10, 64). */
function parseUint64(text: string): bigint | undefined {
  if (!DIGITS.test(text)) return undefined;
  const digits = text.replace(/^0+(?=\d)/, '');
  if (digits.length > 20) return undefined; // before BigInt, which is slow on huge strings
  const n = BigInt(digits);
  return n <= UINT64 ? n : undefined;
}

const UUID_36 = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UUID_32 = /^[0-9a-f]{32}$/i;
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** A UUID in one of the forms Go's uuid.Parse reads, as lower-case 8-4-4-4-12; nil is returned too (it parses). */
function parseUuid(text: string): string | undefined {
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
const isV4 = (id: string): boolean => V4.test(id);

const WORKQ_NAME = /^[A-Za-z0-9_.-]{1,255}$/;

/** §4's name rule, plus rq's: no leading `.`, no `.deleted.<digits>` suffix (names.ts). */
const isWorkqName = (name: string): boolean => WORKQ_NAME.test(name) && isProtocolQueueName(name);

const TIME = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z$/;

/** `<time>` as epoch ms, fractional below the millisecond (`.5005Z` → …500.5), or undefined. */
function parseTime(text: string): number | undefined {
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

/** A flag's value read by `parse`: 0 (the default of every Workq flag) when absent, undefined when bad. */
function optionalFlag(flags: Flags, key: string, parse: (text: string) => number | undefined): number | undefined {
  const text = flags.get(key);
  return text === undefined ? 0 : parse(text);
}

// ---------------------------------------------------------------------------------------
// Commands (§5)

type Flags = ReadonlyMap<string, string>;

/** A command line split into positional arguments and flags (§1). */
interface Line {
  cmd: string;
  args: string[];
  flags: Flags;
}

/** The commands followed by a block: the positional count and the text of a size or block error. */
const BLOCK_COMMANDS: ReadonlyMap<string, { args: number; sizeError: string }> = new Map([
  ['add', { args: 5, sizeError: E.payloadSize }],
  ['schedule', { args: 6, sizeError: E.payloadSize }],
  ['run', { args: 5, sizeError: E.payloadSize }],
  ['complete', { args: 2, sizeError: E.payloadSize }], // sic, §5.5
  ['fail', { args: 2, sizeError: E.resultSize }],
]);
const LINE_COMMANDS: ReadonlySet<string> = new Set(['lease', 'result', 'delete', 'inspect']);

/** §5.9: the inspect objects and their positional counts after the object. */
const INSPECT_ARGS: ReadonlyMap<string, number> = new Map([
  ['server', 0],
  ['queues', 2],
  ['queue', 1],
  ['jobs', 3],
  ['scheduled-jobs', 3],
  ['job', 1],
]);

/** A check's outcome: the request, or the text of the `-CLIENT-ERROR` it failed. */
type Checked = WorkqRequest | string;

const CLOSE: Decoded = { close: true };
/** An HTTP request line (`<method> <target> HTTP/<d>.<d>`) or a Host header: never a Workq command. */
const HTTP_LINE = /^(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/\d+\.\d+|host:.*)$/is;
const fail = (text: string): Decoded => ({ reply: clientError(text) });
const outcome = (checked: Checked): Decoded => (typeof checked === 'string' ? fail(checked) : { request: checked });

/**
 * The bytes received and not decoded yet, kept as the chunks they came in: a block is copied
 * once, when it is complete, and the search for a line's LF looks at each byte once however
 * the line was split.
 */
class Input {
  private chunks: Buffer[] = [];
  length = 0;
  /** The search for LF has looked through chunks before this index, which hold `scanned` bytes. */
  private scanChunk = 0;
  private scanned = 0;

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  /** Offset of the first LF, or -1. */
  indexOfLf(): number {
    for (; this.scanChunk < this.chunks.length; this.scanChunk++) {
      const chunk = this.chunks[this.scanChunk]!;
      const at = chunk.indexOf(LF);
      if (at >= 0) return this.scanned + at;
      this.scanned += chunk.length;
    }
    return -1;
  }

  /** Removes and returns the first n bytes (n <= length). */
  take(n: number): Buffer {
    const head: Buffer[] = [];
    let need = n;
    let used = 0;
    while (need > 0) {
      const chunk = this.chunks[used]!;
      if (chunk.length <= need) {
        head.push(chunk);
        need -= chunk.length;
        used++;
      } else {
        head.push(chunk.subarray(0, need));
        this.chunks[used] = chunk.subarray(need);
        need = 0;
      }
    }
    this.chunks.splice(0, used);
    this.length -= n;
    this.scanChunk = 0;
    this.scanned = 0;
    return head.length === 1 ? head[0]! : Buffer.concat(head, n);
  }

  clear(): void {
    this.chunks = [];
    this.length = 0;
    this.scanChunk = 0;
    this.scanned = 0;
  }
}

/** Incremental decoder of one connection's byte stream (§1). */
export class WorkqDecoder {
  private readonly options: WireOptions;
  private readonly input = new Input();
  /** A block command whose line passed the parser checks, waiting for `size` bytes and CR LF. */
  private awaiting: { line: Line; size: number; lineBytes: number } | undefined;
  private closed = false;

  constructor(options: WireOptions) {
    this.options = options;
  }

  /** Feed the bytes that arrived; returns everything now complete, in order. Keeps partial input for the next call. */
  push(chunk: Buffer): Decoded[] {
    const out: Decoded[] = [];
    if (this.closed) return out;
    this.input.push(chunk);
    for (let next = this.next(); next !== undefined; next = this.next()) {
      out.push(next);
      if ('close' in next) {
        this.closed = true;
        this.input.clear();
        this.awaiting = undefined;
        break;
      }
    }
    return out;
  }

  /** Bytes held for an incomplete command (0 when idle between commands). The server closes without reply at EOF when > 0 (§1: EOF in the middle of a line). */
  get pending(): number {
    return this.input.length + (this.awaiting?.lineBytes ?? 0);
  }

  /** The next complete item, or undefined when more bytes are needed. */
  private next(): Decoded | undefined {
    for (;;) {
      const awaiting = this.awaiting;
      if (awaiting !== undefined) {
        const { line, size } = awaiting;
        if (this.input.length < size + 2) return undefined;
        this.awaiting = undefined;
        const block = this.input.take(size + 2);
        if (block[size] !== CR || block[size + 1] !== LF) return fail(BLOCK_COMMANDS.get(line.cmd)!.sizeError);
        return outcome(this.afterBlock(line, block.subarray(0, size)));
      }
      const lf = this.input.indexOfLf();
      if (lf < 0) return this.input.length >= MAX_COMMAND ? CLOSE : undefined;
      if (lf + 1 > MAX_COMMAND) return CLOSE;
      const raw = this.input.take(lf + 1);
      if (raw[lf - 1] !== CR) return CLOSE; // a bare LF, also a line that is only `\n`
      const text = raw.toString('latin1', 0, lf - 1);
      if (HTTP_LINE.test(text)) return { close: true, http: true };
      const decoded = this.decodeLine(text, lf + 1);
      if (decoded !== undefined) return decoded;
    }
  }

  /** §1's parser checks on one line; undefined when a block command now waits for its block. */
  private decodeLine(text: string, lineBytes: number): Decoded | undefined {
    const [cmd = '', ...tokens] = text.split(' ');
    const block = BLOCK_COMMANDS.get(cmd);
    if (block === undefined && !LINE_COMMANDS.has(cmd)) return fail(E.unknown);
    const args: string[] = [];
    const flags = new Map<string, string>();
    for (const token of tokens) {
      if (token === '') continue;
      const eq = token.indexOf('=');
      if (token.startsWith('-') && eq >= 0) {
        const key = token.slice(1, eq);
        const value = token.slice(eq + 1);
        if (key === '' || value === '' || flags.has(key)) return fail(E.flags);
        flags.set(key, value);
      } else {
        args.push(token);
      }
    }
    const line: Line = { cmd, args, flags };
    if (block === undefined) return outcome(this.lineCommand(line));
    if (args.length !== block.args) return fail(E.args);
    const size = parseInt(args[block.args - 1]!, 0, MAX_BLOCK);
    if (size === undefined) return fail(block.sizeError);
    if (lineBytes + size > MAX_COMMAND) return CLOSE;
    this.awaiting = { line, size, lineBytes };
    return undefined;
  }

  /** The id is acceptable (§4 profile): never nil; version 4 with the RFC 4122 variant under strictUuidV4. */
  private acceptable(id: string): boolean {
    return id !== NIL_UUID && (!this.options.strictUuidV4 || isV4(id));
  }

  /** `add` step 4 (§5.1), also `schedule`'s, with the TTL counted from `startMs`. */
  private jobRanges(id: string, name: string, ttrMs: number, ttl: bigint, startMs: number, now: number): string | undefined {
    if (!this.acceptable(id)) return E.id;
    if (!isWorkqName(name)) return E.name;
    if (ttrMs < 1 || ttrMs > MAX_TTR_MS) return E.ttr;
    if (ttl < 1n || (this.options.strictTtlCap && ttl > STRICT_TTL_CAP)) return E.ttl;
    // Expiry in the future. An expiry past year 9999 counts as never, which is in the future,
    // and a Number that large compares the same. For `add` (start = now) it always holds.
    if (!(startMs + Number(ttl) > now)) return E.time;
    return undefined;
  }

  /** The checks of add, schedule, run, complete and fail that come after the block (§5.1–§5.6). */
  private afterBlock(line: Line, payload: Buffer): Checked {
    const { cmd, args, flags } = line;
    // The block's size was checked against 1 MiB before it was read, which covers each
    // command's "payload ≤ 1 MiB" step; a name is never empty (empty tokens are dropped),
    // which covers add's "name is non-empty".
    switch (cmd) {
      case 'add':
      case 'schedule': {
        if (flags.size > 3) return E.args;
        const [idText, name, ttrText, ttlText, timeText] = args as [string, string, string, string, string];
        const id = parseUuid(idText);
        if (id === undefined) return E.id;
        const ttrMs = parseUint(ttrText, UINT32);
        if (ttrMs === undefined) return E.ttr;
        const ttl = parseUint64(ttlText);
        if (ttl === undefined) return E.ttl;
        const now = Date.now();
        const timeMs = cmd === 'schedule' ? parseTime(timeText) : now;
        if (timeMs === undefined) return E.time;
        const maxAttempts = optionalFlag(flags, 'max-attempts', (t) => parseUint(t, UINT8));
        if (maxAttempts === undefined) return E.maxAttempts;
        const maxFails = optionalFlag(flags, 'max-fails', (t) => parseUint(t, UINT8));
        if (maxFails === undefined) return E.maxFails;
        const priority = optionalFlag(flags, 'priority', (t) => parseInt(t, INT32_MIN, INT32_MAX));
        if (priority === undefined) return E.priority;
        const bad = this.jobRanges(id, name, ttrMs, ttl, timeMs, now);
        if (bad !== undefined) return bad;
        const job = { id, name, ttrMs, ttl, payload, priority, maxAttempts, maxFails };
        return cmd === 'add' ? { cmd, ...job } : { cmd, ...job, timeMs };
      }
      case 'run': {
        if (flags.size > 1) return E.args;
        const [idText, name, ttrText, waitText] = args as [string, string, string, string];
        const id = parseUuid(idText);
        if (id === undefined) return E.id;
        const ttrMs = parseUint(ttrText, UINT32);
        if (ttrMs === undefined) return E.ttr;
        const priority = optionalFlag(flags, 'priority', (t) => parseInt(t, INT32_MIN, INT32_MAX));
        if (priority === undefined) return E.priority;
        const waitMs = parseUint(waitText, MAX_WAIT_MS);
        if (waitMs === undefined) return E.wait;
        if (!this.acceptable(id)) return E.id;
        if (!isWorkqName(name)) return E.name;
        if (ttrMs < 1 || ttrMs > MAX_TTR_MS) return E.ttr;
        return { cmd, id, name, ttrMs, waitMs, payload, priority };
      }
      default: {
        // complete, fail
        if (flags.size > 0) return E.args;
        const id = parseUuid(args[0]!);
        if (id === undefined || !this.acceptable(id)) return E.id;
        return { cmd: cmd as 'complete' | 'fail', id, result: payload };
      }
    }
  }

  /** lease, result, delete and inspect, which have no block (§5.4, §5.7–§5.9). */
  private lineCommand({ cmd, args, flags }: Line): Checked {
    switch (cmd) {
      case 'lease': {
        if (args.length < 2 || flags.size > 0) return E.args;
        const names = args.slice(0, -1);
        const waitMs = parseUint(args[args.length - 1]!, MAX_WAIT_MS);
        if (waitMs === undefined) return E.wait;
        if (!names.every(isWorkqName)) return E.name;
        return { cmd, names, waitMs };
      }
      case 'result': {
        if (args.length !== 2 || flags.size > 0) return E.args;
        const id = parseUuid(args[0]!);
        if (id === undefined || !this.acceptable(id)) return E.id;
        const waitMs = parseUint(args[1]!, MAX_WAIT_MS);
        if (waitMs === undefined) return E.wait;
        return { cmd, id, waitMs };
      }
      case 'delete': {
        if (args.length !== 1 || flags.size > 0) return E.args;
        const id = parseUuid(args[0]!);
        if (id === undefined || id === NIL_UUID) return E.id;
        return { cmd, id, ignore: this.options.strictUuidV4 && !isV4(id) };
      }
      default:
        return this.inspect(args, flags);
    }
  }

  /** §5.9. */
  private inspect(args: string[], flags: Flags): Checked {
    const [what, ...rest] = args;
    if (what === undefined) return E.args;
    const count = INSPECT_ARGS.get(what);
    if (count === undefined) return E.unknown;
    if (flags.size > 0 || rest.length !== count) return E.args;
    const [first = '', second = '', third = ''] = rest;
    switch (what) {
      case 'server':
        return { cmd: 'inspect', what };
      case 'queues': {
        const offset = parseUint(first, UINT32);
        if (offset === undefined) return E.offset;
        const limit = parseUint(second, MAX_LIMIT);
        if (limit === undefined || limit < 1) return E.limit;
        return { cmd: 'inspect', what, offset, limit };
      }
      case 'queue':
        return isWorkqName(first) ? { cmd: 'inspect', what, name: first } : E.name;
      case 'job': {
        // No version check here (§5.9), whatever the profile.
        const id = parseUuid(first);
        return id === undefined || id === NIL_UUID ? E.id : { cmd: 'inspect', what, id };
      }
      default: {
        // jobs, scheduled-jobs
        if (!isWorkqName(first)) return E.name;
        const offset = parseUint(second, UINT32);
        if (offset === undefined) return E.offset;
        const limit = parseUint(third, MAX_LIMIT);
        if (limit === undefined || limit < 1) return E.limit;
        return { cmd: 'inspect', what: what as 'jobs' | 'scheduled-jobs', name: first, offset, limit };
      }
    }
  }
}
