/**
 * The Workq command table: the commands, how many positional
 * arguments each takes and whether a data block follows, and every argument check of
 * each command in Workq's order, turning a command line (and its block) into a typed request or
 * the text of the `-CLIENT-ERROR` it failed. It does no I/O and keeps no queue state; the
 * checks that need the store (Duplicate job, Duplicate result, NOT-FOUND) are the
 * handlers'. Where the protocol leaves room, this is what we decided:
 * - Flag *counts* (more than 3 on add/schedule, more than 1 on run, any flag on complete and
 *   fail) are checked after the block was read, so the block is consumed. Workq checks "more
 *   than 3 flags" on add after the size and the block, and recovers (reads the block as the
 *   next command) only after a bad argument count, flag syntax or size; complete and fail get
 *   the same treatment.
 * - The nil UUID is refused everywhere, `delete` and `inspect job` included.
 * - "In the future" checks use Date.now() when the command is decoded.
 */
import { INT32_MAX, INT32_MIN, NIL_UUID, UINT32, UINT8, isV4, isWorkqName, optionalFlag, parseInt, parseTime, parseUint, parseUint64, parseUuid, type Flags } from './arguments.js';

export interface WireOptions {
  /** Profile: only version-4 RFC 4122 UUIDs (as the reference server); default false = any well-formed non-nil UUID. */
  strictUuidV4: boolean;
  /** Profile: TTL capped at 2,592,000,000 ms (as the reference server); default false = any uint64 >= 1. */
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
  | { cmd: 'delete'; id: string; /** strictUuidV4 and a parsable non-v4 id: answer +OK and delete nothing, as the reference server does. */ ignore: boolean }
  | InspectRequest;

/** Workq's limits. */
const MAX_TTR_MS = 86_400_000;
const MAX_WAIT_MS = 86_400_000;
const STRICT_TTL_CAP = 2_592_000_000n;
const MAX_LIMIT = 100;

/** Workq's error texts, as the checks (and the decoder) raise them. */
export const E = {
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

/** A command line split into positional arguments and flags. */
export interface Line {
  cmd: string;
  args: string[];
  flags: Flags;
}

/** The commands followed by a block: the positional count and the text of a size or block error. */
export const BLOCK_COMMANDS: ReadonlyMap<string, { args: number; sizeError: string }> = new Map([
  ['add', { args: 5, sizeError: E.payloadSize }],
  ['schedule', { args: 6, sizeError: E.payloadSize }],
  ['run', { args: 5, sizeError: E.payloadSize }],
  ['complete', { args: 2, sizeError: E.payloadSize }], // sic: Workq says payload, not result, here
  ['fail', { args: 2, sizeError: E.resultSize }],
]);
export const LINE_COMMANDS: ReadonlySet<string> = new Set(['lease', 'result', 'delete', 'inspect']);

/** The inspect objects and their positional counts after the object. */
const INSPECT_ARGS: ReadonlyMap<string, number> = new Map([
  ['server', 0],
  ['queues', 2],
  ['queue', 1],
  ['jobs', 3],
  ['scheduled-jobs', 3],
  ['job', 1],
]);

/** A check's outcome: the request, or the text of the `-CLIENT-ERROR` it failed. */
export type Checked = WorkqRequest | string;

/** The id is acceptable (the profile): never nil; version 4 with the RFC 4122 variant under strictUuidV4. */
function acceptable(id: string, options: WireOptions): boolean {
  return id !== NIL_UUID && (!options.strictUuidV4 || isV4(id));
}

/** `add`'s range checks (id, name, TTR, TTL, expiry in the future), also `schedule`'s, with the TTL counted from `startMs`. */
function jobRanges(options: WireOptions, id: string, name: string, ttrMs: number, ttl: bigint, startMs: number, now: number): string | undefined {
  if (!acceptable(id, options)) return E.id;
  if (!isWorkqName(name)) return E.name;
  if (ttrMs < 1 || ttrMs > MAX_TTR_MS) return E.ttr;
  if (ttl < 1n || (options.strictTtlCap && ttl > STRICT_TTL_CAP)) return E.ttl;
  // Expiry in the future. An expiry past year 9999 counts as never, which is in the future,
  // and a Number that large compares the same. For `add` (start = now) it always holds.
  if (!(startMs + Number(ttl) > now)) return E.time;
  return undefined;
}

/** The checks of add, schedule, run, complete and fail that come after the block. */
export function checkBlockCommand(line: Line, payload: Buffer, options: WireOptions): Checked {
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
      const bad = jobRanges(options, id, name, ttrMs, ttl, timeMs, now);
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
      if (!acceptable(id, options)) return E.id;
      if (!isWorkqName(name)) return E.name;
      if (ttrMs < 1 || ttrMs > MAX_TTR_MS) return E.ttr;
      return { cmd, id, name, ttrMs, waitMs, payload, priority };
    }
    default: {
      // complete, fail
      if (flags.size > 0) return E.args;
      const id = parseUuid(args[0]!);
      if (id === undefined || !acceptable(id, options)) return E.id;
      return { cmd: cmd as 'complete' | 'fail', id, result: payload };
    }
  }
}

/** lease, result, delete and inspect, which have no block. */
export function checkLineCommand({ cmd, args, flags }: Line, options: WireOptions): Checked {
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
      if (id === undefined || !acceptable(id, options)) return E.id;
      const waitMs = parseUint(args[1]!, MAX_WAIT_MS);
      if (waitMs === undefined) return E.wait;
      return { cmd, id, waitMs };
    }
    case 'delete': {
      if (args.length !== 1 || flags.size > 0) return E.args;
      const id = parseUuid(args[0]!);
      if (id === undefined || id === NIL_UUID) return E.id;
      return { cmd, id, ignore: options.strictUuidV4 && !isV4(id) };
    }
    default:
      return checkInspect(args, flags);
  }
}

/** `inspect`'s arguments. */
function checkInspect(args: string[], flags: Flags): Checked {
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
      // No version check here, whatever the profile.
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
