/**
 * The Workq front door (docs/doors/workq.md) over real TCP, served by the web process of a real
 * rq-mgr against real queue processes: framing and error recovery, and the example
 * exchange of Workq's documentation byte for byte; every command's checks in their order
 * and every error text; ordering; the TTR, TTL, max-attempts and max-fails rules; waits of
 * `lease`, `result` and `run` across connections; `inspect`; the strict and lenient
 * profiles; races between connections; a queue process killed with -9; and a bad config
 * section. Each describe shares one install; each test uses queue names of its own.
 *
 * Where a test must know a waiting command has reached the server before it acts, it
 * watches something the command does (a `lease` records its names); otherwise what it
 * checks holds whether the wait began before or after the other connection acted.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { parseWorkqSection } from '../../src/protocols/workq/config.js';
import { freePort, REPO, useTestRoot, waitFor, type TestRoot } from '../helpers/install.js';
import { sharedProtocols, startProtocols } from '../helpers/protocols.js';
import { webPid } from '../helpers/web-process.js';
import { clientError, NOT_FOUND, OK, TIMEOUT, withBlock, WorkqClient, workqClients, type InspectRecord, type LeasedJob, type Reply } from '../helpers/workq-client.js';

const MiB = 1024 * 1024;
/** Outlives the file: no job expires by TTL unless its test asks for it. */
const LONG_TTL = 600_000;
/** The version-1 id of Workq's documented examples (which say "UUIDv4"). */
const V1_ID = '6ba7b810-9dad-11d1-80b4-00c04fd430c4';
/** Version 4, but the Microsoft variant (c), not RFC 4122's. */
const V4_OTHER_VARIANT = '6ba7b810-9dad-41d1-c0b4-00c04fd430c4';
const NIL_ID = '00000000-0000-0000-0000-000000000000';

type Ids<N extends number, R extends string[] = []> = R['length'] extends N ? R : Ids<N, [...R, string]>;

/** `n` fresh v4 ids in ascending byte order, so that id order agrees with the order a test creates them in. */
function ids<N extends number>(n: N): Ids<N> {
  return Array.from({ length: n }, () => randomUUID()).sort() as Ids<N>;
}

function leasedJob(r: Reply): LeasedJob {
  if (r.type !== 'lease') throw new Error(`expected a lease reply, got ${JSON.stringify(r.text)}`);
  return r.job;
}

function recordsOf(r: Reply): InspectRecord[] {
  if (r.type !== 'records') throw new Error(`expected inspect records, got ${JSON.stringify(r.text)}`);
  return r.records;
}

/** The keys of `inspect job`, or undefined for -NOT-FOUND. */
async function jobOf(c: WorkqClient, id: string): Promise<Record<string, string> | undefined> {
  const r = await c.inspect('job', id);
  if (r.type === 'not-found') return undefined;
  const records = recordsOf(r);
  expect(records).toHaveLength(1);
  return records[0]!.values;
}

async function serverKeys(c: WorkqClient): Promise<Record<string, string>> {
  const [record] = recordsOf(await c.inspect('server'));
  return record!.values;
}

/** `inspect jobs` or `inspect scheduled-jobs`: the ids listed. */
async function listed(c: WorkqClient, what: 'jobs' | 'scheduled-jobs', q: string, offset = 0, limit = 100): Promise<string[]> {
  return recordsOf(await c.inspect(what, q, offset, limit)).map((r) => r.label);
}

/** Lease with wait 0 until the queue gives nothing; the ids in the order they came. */
async function drain(c: WorkqClient, q: string): Promise<string[]> {
  const out: string[] = [];
  for (;;) {
    const r = await c.lease([q], 0);
    if (r.type === 'timeout') return out;
    out.push(leasedJob(r).id);
  }
}

const queueReply = (q: string, ready: number, scheduled: number): string => `+OK 1\r\n${q} 2\r\nready-len ${ready}\r\nscheduled-len ${scheduled}\r\n`;

const resultReply = (id: string, success: boolean, result: string): string => `+OK 1\r\n${id} ${success ? 1 : 0} ${Buffer.byteLength(result)}\r\n${result}\r\n`;

/** RFC 3339 UTC in whole seconds, as `created` and `time` are shown. */
const isoSeconds = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Wait, polling the clock, until `ms` has come: used where the protocol is about time. */
const untilPast = (ms: number): Promise<void> => waitFor(() => Date.now() >= ms, Math.max(0, ms - Date.now()) + 5_000, `the clock to reach ${ms}`);

/** Make the next instant differ from the last one, so that two jobs' created times differ. */
const nextMs = (): Promise<void> => untilPast(Date.now() + 2);

/** A promise that tells whether it has settled yet. */
function watched<T>(p: Promise<T>): { p: Promise<T>; settled: () => boolean } {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  return { p, settled: () => done };
}

describe('workq: framing and the example exchange', () => {
  const doors = sharedProtocols({ workq: {} });
  const open = workqClients(() => doors.port('workq'));

  it('answers the example exchange of Workq\'s documentation byte for byte', async () => {
    const c = await open();
    const id = '6ba7b810-9dad-41d1-80b4-00c04fd430c4';
    const say = async (bytes: string, lines: number): Promise<string> => {
      c.send(bytes);
      return c.lines(lines);
    };
    expect(await say(`add ${id} ping 1000 60000 4 -priority=10 -max-attempts=3 -max-fails=1\r\npong\r\n`, 1)).toBe('+OK\r\n');
    expect(await say(`add ${id} ping 1000 60000 4\r\npong\r\n`, 1)).toBe('-CLIENT-ERROR Duplicate job\r\n');
    expect(await say('lease ping 1000\r\n', 3)).toBe(`+OK 1\r\n${id} ping 1000 4\r\npong\r\n`);
    expect(await say(`complete ${id} 2\r\nok\r\n`, 1)).toBe('+OK\r\n');
    expect(await say(`complete ${id} 2\r\nok\r\n`, 1)).toBe('-CLIENT-ERROR Duplicate result\r\n');
    expect(await say(`result ${id} 0\r\n`, 3)).toBe(`+OK 1\r\n${id} 1 2\r\nok\r\n`);
    const asked = Date.now();
    expect(await say('lease nothing-here 100\r\n', 1)).toBe('-TIMEOUT\r\n');
    expect(Date.now() - asked).toBeGreaterThanOrEqual(95);
    expect(await say('add 88888882-2222-4222-8222-222222222222 q10 10 100 1 -priority=\r\na\r\n', 2)).toBe('-CLIENT-ERROR Invalid command flags\r\n-CLIENT-ERROR Unknown command\r\n');
    // No third reply, and the refused job was not made.
    expect((await c.inspect('job', '88888882-2222-4222-8222-222222222222')).text).toBe(NOT_FOUND);
    expect((await c.delete(id)).text).toBe(OK);
  });

  it('answers pipelined commands one by one, in order', async () => {
    const c = await open();
    const q = 'fr-pipe';
    const [a, b] = ids(2);
    c.send(
      Buffer.concat([
        withBlock(`add ${a} ${q} 60000 ${LONG_TTL}`, 'first'),
        withBlock(`add ${b} ${q} 60000 ${LONG_TTL}`, 'second'),
        Buffer.from(`lease ${q} 0\r\ninspect job ${b}\r\ndelete ${a}\r\ninspect job ${a}\r\nnope\r\nresult ${b} 0\r\ndelete ${b}\r\n`),
      ]),
    );
    expect((await c.reply('ok')).text).toBe(OK);
    expect((await c.reply('ok')).text).toBe(OK);
    expect(leasedJob(await c.reply('lease'))).toEqual({ id: a, name: q, ttr: 60000, payload: Buffer.from('first') });
    const [record] = recordsOf(await c.reply('inspect'));
    expect(record).toMatchObject({ label: b, values: { payload: 'second', state: '0' } });
    expect((await c.reply('ok')).text).toBe(OK);
    expect((await c.reply('inspect')).text).toBe(NOT_FOUND);
    expect((await c.reply('ok')).text).toBe(clientError('Unknown command'));
    expect((await c.reply('result')).text).toBe(TIMEOUT);
    expect((await c.reply('ok')).text).toBe(OK);
  });

  it('answers Unknown command for a case difference, an empty line, a leading space and an unknown name', async () => {
    const c = await open();
    c.send('ADD\r\nLease fr-unknown 0\r\n\r\n lease fr-unknown 0\r\nfrobnicate x\r\ninspect Server\r\n');
    expect(await c.lines(6)).toBe(clientError('Unknown command').repeat(6));
  });

  it('reads the block of a line that failed the arg-count, flag or size check as the next command', async () => {
    const c = await open();
    const q = 'fr-left';
    const [x, y] = ids(2);
    expect((await c.add(x, q, 60000, LONG_TTL, 'x')).text).toBe(OK);
    // The block is itself a command, so its reply shows that it was read as one.
    const block = `inspect queue ${q}`;
    const len = block.length;
    const refused: Array<[string, string]> = [
      [`add ${y} ${q} 1000 ${len}`, 'Invalid command args'],
      [`add ${y} ${q} 1000 60000 7 ${len}`, 'Invalid command args'],
      [`add ${y} ${q} 1000 60000 ${len} -priority=`, 'Invalid command flags'],
      [`add ${y} ${q} 1000 60000 ${len} -=1`, 'Invalid command flags'],
      [`add ${y} -priority=1 ${q} 1000 60000 ${len} -priority=2`, 'Invalid command flags'],
      [`add ${y} ${q} 1000 60000 ${len}x`, 'Invalid payload size'],
      [`add ${y} ${q} 1000 60000 -${len}`, 'Invalid payload size'],
      [`add ${y} ${q} 1000 60000 1048577`, 'Invalid payload size'],
      [`schedule ${y} ${q} 1000 60000 2030-01-01T00:00:00Z ${len}x`, 'Invalid payload size'],
      [`schedule ${y} ${q} 1000 60000 ${len}`, 'Invalid command args'],
      [`run ${y} ${q} 1000 100 0x${len}`, 'Invalid payload size'],
      [`run ${y} ${q} 1000 100 1048577`, 'Invalid payload size'],
      [`complete ${x} ${len}x`, 'Invalid payload size'],
      [`complete ${x} 1048577`, 'Invalid payload size'],
      [`complete ${x} ${len} extra`, 'Invalid command args'],
      [`fail ${x} ${len}x`, 'Invalid result size'],
      [`fail ${x} -${len}`, 'Invalid result size'],
      [`fail ${x} 1048577`, 'Invalid result size'],
      [`fail ${x} ${len} -priority=`, 'Invalid command flags'],
    ];
    for (const [line, error] of refused) {
      c.send(`${line}\r\n${block}\r\n`);
      expect(await c.lines(5), line).toBe(clientError(error) + queueReply(q, 1, 0));
    }
    expect(await jobOf(c, y)).toBeUndefined();
    expect(await jobOf(c, x)).toMatchObject({ state: '0', fails: '0' });
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('consumes the block when the line passed the parser and a later check failed (flag count on)', async () => {
    const c = await open();
    const q = 'fr-consumed';
    const [y, unknown] = ids(2);
    const block = `inspect queue ${q}`;
    const len = block.length;
    const refused: Array<[string, string]> = [
      [`add ${y} ${q} 1000 60000 ${len} -a=1 -b=2 -c=3 -d=4`, clientError('Invalid command args')],
      [`add not-a-uuid ${q} 1000 60000 ${len}`, clientError('Invalid ID')],
      [`run ${y} ${q} 1000 100 ${len} -priority=1 -max-attempts=2`, clientError('Invalid command args')],
      [`complete not-a-uuid ${len}`, clientError('Invalid ID')],
      [`fail ${unknown} ${len}`, NOT_FOUND],
    ];
    for (const [line, reply] of refused) {
      c.send(`${line}\r\n${block}\r\n`);
      expect(await c.lines(1), line).toBe(reply);
      // The next reply is the next command's, not the block's.
      expect((await c.inspect('job', y)).text, line).toBe(NOT_FOUND);
    }
  });

  it('answers Invalid payload/result size when a block is not followed by CR LF, and parses on right after those 2 bytes', async () => {
    const c = await open();
    const q = 'fr-crlf';
    const [x, y] = ids(2);
    expect((await c.add(x, q, 60000, LONG_TTL, 'x')).text).toBe(OK);
    const next = `inspect queue ${q}\r\n`;
    const cases: Array<[string, string]> = [
      [`add ${y} ${q} 1000 60000 1\r\naXX`, 'Invalid payload size'],
      [`schedule ${y} ${q} 1000 60000 2030-01-01T00:00:00Z 1\r\na\n\n`, 'Invalid payload size'],
      [`complete ${x} 2\r\nok\n\r`, 'Invalid payload size'],
      [`fail ${x} 2\r\nok  `, 'Invalid result size'],
    ];
    for (const [bytes, error] of cases) {
      c.send(bytes + next);
      expect(await c.lines(5), bytes).toBe(clientError(error) + queueReply(q, 1, 0));
    }
    // `a` then `\ri`: the 2 bytes are not CR LF, and parsing goes on at `nspect ...`.
    c.send(`run ${y} ${q} 1000 100 1\r\na\r${next}`);
    expect(await c.lines(2)).toBe(clientError('Invalid payload size') + clientError('Unknown command'));
    expect(await jobOf(c, y)).toBeUndefined();
    expect(await jobOf(c, x)).toMatchObject({ state: '0', fails: '0' });
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('closes the connection without a reply on a line ending in a bare LF', async () => {
    const c = await open();
    c.send(`inspect job ${randomUUID()}\r\ninspect server\n`);
    expect((await c.reply('inspect')).text).toBe(NOT_FOUND);
    expect(await c.closed()).toBe('');
    const d = await open();
    d.send('\n');
    expect(await d.closed()).toBe('');
  });

  it('closes the connection without a reply on EOF in the middle of a line, and makes nothing on EOF in a block', async () => {
    const c = await open();
    c.send('inspect serv');
    c.end();
    expect(await c.closed()).toBe('');
    const y = randomUUID();
    const d = await open();
    d.send(`add ${y} fr-eof 1000 60000 10\r\nabc`);
    d.end();
    await d.closed();
    expect(await jobOf(await open(), y)).toBeUndefined();
  });

  it('closes the connection on a command (line plus block) longer than 1,058,576 bytes', async () => {
    const c = await open();
    c.send(`inspect ${'a'.repeat(1_058_576 + 4096)}`);
    await c.closed();
    // A line of over 10,000 bytes (runs of spaces) and a block of 1 MiB.
    const y = randomUUID();
    const d = await open();
    d.send(withBlock(`add ${y} fr-big 1000 60000${' '.repeat(10_100)}`, randomBytes(MiB)));
    await d.closed();
    expect(await jobOf(await open(), y)).toBeUndefined();
  });

  it('splits on runs of spaces, drops empty tokens, and takes flags between positional arguments', async () => {
    const c = await open();
    const q = 'fr-spaces';
    const [x, y] = ids(2);
    expect((await c.request('ok', `add  ${x}   ${q}  1000   ${LONG_TTL}  3  \r\nabc\r\n`)).text).toBe(OK);
    expect((await c.request('ok', `add ${y} -priority=-8 ${q} 1500 -max-attempts=4 ${LONG_TTL} -max-fails=2 1\r\nz\r\n`)).text).toBe(OK);
    expect(await jobOf(c, y)).toMatchObject({ name: q, ttr: '1500', ttl: String(LONG_TTL), payload: 'z', priority: '-8', 'max-attempts': '4', 'max-fails': '2' });
    expect(leasedJob(await c.request('lease', `lease   ${q}    0  \r\n`))).toEqual({ id: x, name: q, ttr: 1000, payload: Buffer.from('abc') });
    expect(recordsOf(await c.request('inspect', `inspect   job    ${y}\r\n`))[0]!.label).toBe(y);
    expect((await c.request('ok', `delete  ${x} \r\n`)).text).toBe(OK);
    expect((await c.request('ok', `delete ${y}\r\n`)).text).toBe(OK);
  });

  it('passes every byte value, CR LF inside and empty blocks through payloads and results unchanged', async () => {
    const c = await open();
    const q = 'fr-binary';
    const [x, e] = ids(2);
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const payload = Buffer.concat([all, Buffer.from('\r\nadd x\r\n\r'), Buffer.from(all).reverse(), Buffer.from('\n')]);
    expect((await c.add(x, q, 60000, LONG_TTL, payload)).text).toBe(OK);
    expect((await c.add(e, q, 60000, LONG_TTL, '')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0))).toEqual({ id: x, name: q, ttr: 60000, payload });
    const empty = leasedJob(await c.lease([q], 0));
    expect(empty.payload.length).toBe(0);
    const result = Buffer.concat([Buffer.from(all).reverse(), Buffer.from('\r\n'), all]);
    expect((await c.complete(x, result)).text).toBe(OK);
    const r = await c.result(x, 0);
    expect(r.type === 'result' && r.result).toEqual({ id: x, success: true, result });
    expect((await c.complete(e, '')).text).toBe(OK);
    expect((await c.result(e, 0)).text).toBe(`+OK 1\r\n${e} 1 0\r\n\r\n`);
    for (const id of [x, e]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('takes payloads and results of exactly 1 MiB byte for byte, and refuses 1 MiB + 1 on every command with a block', async () => {
    const c = await open();
    const q = 'fr-mib';
    const [x, y] = ids(2);
    const payload = randomBytes(MiB);
    const result = randomBytes(MiB);
    expect((await c.add(x, q, 60000, LONG_TTL, payload)).text).toBe(OK);
    const job = leasedJob(await c.lease([q], 0));
    expect({ id: job.id, name: job.name, ttr: job.ttr }).toEqual({ id: x, name: q, ttr: 60000 });
    expect(job.payload.equals(payload)).toBe(true);
    expect((await c.complete(x, result)).text).toBe(OK);
    const r = await c.result(x, 0);
    expect(r.type === 'result' && r.result.success && r.result.result.equals(result)).toBe(true);
    const over = MiB + 1;
    for (const [line, error] of [
      [`add ${y} ${q} 1000 60000 ${over}`, 'Invalid payload size'],
      [`schedule ${y} ${q} 1000 60000 2030-01-01T00:00:00Z ${over}`, 'Invalid payload size'],
      [`run ${y} ${q} 1000 100 ${over}`, 'Invalid payload size'],
      [`complete ${x} ${over}`, 'Invalid payload size'],
      [`fail ${x} ${over}`, 'Invalid result size'],
    ]) {
      expect((await c.request('ok', `${line}\r\n`)).text, line).toBe(clientError(error!));
    }
    expect(await jobOf(c, y)).toBeUndefined();
    expect((await c.delete(x)).text).toBe(OK);
  });
});

describe('workq: commands, ordering and inspect', () => {
  const doors = sharedProtocols({ workq: {} });
  const open = workqClients(() => doors.port('workq'));
  const t = doors.t;

  it('add: checks in Workq\'s order, the limits, unknown flags ignored', async () => {
    const c = await open();
    const q = 'cmd-add';
    const [u, held] = ids(2);
    expect((await c.add(held, q, 60000, LONG_TTL, 'h')).text).toBe(OK);
    // Step 1: the parser refuses the line (no block sent).
    expect((await c.request('ok', `add ${u} ${q} 1000 60000\r\n`)).text).toBe(clientError('Invalid command args'));
    const refused: Array<[string, string, string]> = [
      // step 3 parses, in order: id, ttr, ttl, max-attempts, max-fails, priority (the name is only non-empty here)
      [`add not-a-uuid q! x x`, '-max-attempts=x -max-fails=x -priority=x', 'Invalid ID'],
      [`add ${u} q! x x`, '-max-attempts=x -max-fails=x -priority=x', 'Invalid TTR'],
      [`add ${u} q! 4294967296 x`, '', 'Invalid TTR'],
      [`add ${u} q! 0 x`, '-max-attempts=x -max-fails=x -priority=x', 'Invalid TTL'],
      [`add ${u} q! 0 -1`, '', 'Invalid TTL'],
      [`add ${u} q! 0 18446744073709551616`, '', 'Invalid TTL'],
      [`add ${u} q! 0 0`, '-max-attempts=x -max-fails=x -priority=x', 'Invalid Max Attempts'],
      [`add ${u} q! 0 0`, '-max-attempts=256', 'Invalid Max Attempts'],
      [`add ${u} q! 0 0`, '-max-attempts=-1', 'Invalid Max Attempts'],
      [`add ${u} q! 0 0`, '-max-fails=256 -priority=x', 'Invalid Max Fails'],
      [`add ${u} q! 0 0`, '-priority=x', 'Invalid Priority'],
      [`add ${u} q! 0 0`, '-priority=2147483648', 'Invalid Priority'],
      [`add ${u} q! 0 0`, '-priority=-2147483649', 'Invalid Priority'],
      // step 4, in order: id acceptable, name, ttr range, ttl range
      [`add ${NIL_ID} q! 0 0`, '', 'Invalid ID'],
      [`add ${u} q! 0 0`, '', 'Invalid Name'],
      [`add ${u} ${q} 0 0`, '', 'Invalid TTR'],
      [`add ${u} ${q} 86400001 0`, '', 'Invalid TTR'],
      [`add ${u} ${q} 1000 0`, '', 'Invalid TTL'],
      // step 5 comes last
      [`add ${held} q! 1000 60000`, '', 'Invalid Name'],
      [`add ${held} ${q} 1000 60000`, '', 'Duplicate job'],
      [`add ${held.toUpperCase()} other-queue 1000 60000`, '', 'Duplicate job'],
      // more than 3 flags
      [`add ${u} ${q} 1000 60000`, '-priority=1 -max-attempts=1 -max-fails=1 -other=1', 'Invalid command args'],
    ];
    for (const [line, flags, error] of refused) {
      expect((await c.request('ok', withBlock(line, 'p', flags))).text, `${line} ${flags}`).toBe(clientError(error));
    }
    for (const name of ['.hidden', 'x.deleted.12', 'a/b', 'é', 'a*b', 'q'.repeat(256)]) {
      expect((await c.add(u, name, 1000, 60000, 'p')).text, name).toBe(clientError('Invalid Name'));
    }
    expect(await jobOf(c, u)).toBeUndefined();
    // The limits themselves are accepted, and an unknown flag is ignored.
    const [a, b, d] = ids(3);
    expect((await c.add(a, q, 86400000, '18446744073709551615', 'a', '-priority=2147483647 -max-attempts=255 -max-fails=255')).text).toBe(OK);
    expect((await c.add(b, q, 1, 1_000_000_000_000, 'b', '-priority=-2147483648 -other=ignored')).text).toBe(OK);
    expect((await c.add(d, 'q'.repeat(255), 1000, LONG_TTL, 'd')).text).toBe(OK);
    expect(await jobOf(c, b)).toMatchObject({ ttr: '1', ttl: '1000000000000', priority: '-2147483648', 'max-attempts': '0', 'max-fails': '0' });
    expect(await jobOf(c, d)).toMatchObject({ name: 'q'.repeat(255) });
    for (const id of [b, d, held]) expect((await c.delete(id)).text).toBe(OK);
    // max-attempts is shown as given: 255 is not the 0 of "unlimited", though both allow 255 leases.
    expect(await jobOf(c, a)).toMatchObject({ ttr: '86400000', ttl: '18446744073709551615', priority: '2147483647', 'max-attempts': '255', 'max-fails': '255' });
    expect((await c.delete(a)).text).toBe(OK);
  });

  it('schedule: checks in Workq\'s order, the time format, and time + TTL in the future', async () => {
    const c = await open();
    const q = 'cmd-schedule';
    const [u, held] = ids(2);
    const future = isoSeconds(Date.now() + 3_600_000);
    expect((await c.add(held, q, 60000, LONG_TTL, 'h')).text).toBe(OK);
    expect((await c.request('ok', `schedule ${u} ${q} 1000 60000 ${future}\r\n`)).text).toBe(clientError('Invalid command args'));
    const refused: Array<[string, string, string]> = [
      [`schedule not-a-uuid q! x x nonsense`, '-max-attempts=x', 'Invalid ID'],
      [`schedule ${u} q! x x nonsense`, '-max-attempts=x', 'Invalid TTR'],
      [`schedule ${u} q! 0 x nonsense`, '-max-attempts=x', 'Invalid TTL'],
      // the time before the flags, and the flags in the order max-attempts, max-fails, priority
      [`schedule ${u} q! 0 0 nonsense`, '-max-attempts=x -max-fails=x -priority=x', 'Invalid Time'],
      [`schedule ${u} q! 0 0 ${future}`, '-priority=x -max-fails=x -max-attempts=x', 'Invalid Max Attempts'],
      [`schedule ${u} q! 0 0 ${future}`, '-priority=x -max-fails=x', 'Invalid Max Fails'],
      [`schedule ${u} q! 0 0 ${future}`, '-priority=x', 'Invalid Priority'],
      [`schedule ${u} q! 0 0 ${future}`, '', 'Invalid Name'],
      [`schedule ${u} ${q} 0 0 ${future}`, '', 'Invalid TTR'],
      [`schedule ${u} ${q} 1000 0 ${future}`, '', 'Invalid TTL'],
      [`schedule ${u} ${q} 1000 60000 2030-01-01T00:00:00+00:00`, '', 'Invalid Time'],
      [`schedule ${u} ${q} 1000 60000 2030-01-01T00:00:00`, '', 'Invalid Time'],
      [`schedule ${u} ${q} 1000 60000 2030-13-01T00:00:00Z`, '', 'Invalid Time'],
      [`schedule ${u} ${q} 1000 60000 1893456000`, '', 'Invalid Time'],
      // time + TTL already past
      [`schedule ${u} ${q} 1000 60000 2020-01-01T00:00:00Z`, '', 'Invalid Time'],
      [`schedule ${held} ${q} 1000 60000 ${future}`, '', 'Duplicate job'],
      [`schedule ${u} ${q} 1000 60000 ${future}`, '-a=1 -b=2 -c=3 -d=4', 'Invalid command args'],
    ];
    for (const [line, flags, error] of refused) {
      expect((await c.request('ok', withBlock(line, 'p', flags))).text, `${line} ${flags}`).toBe(clientError(error));
    }
    expect(await jobOf(c, u)).toBeUndefined();
    // A time in the past with time + TTL ahead: ready at once. A future one: held, not leasable.
    const [past, later] = ids(2);
    expect((await c.schedule(past, q, 1000, LONG_TTL, isoSeconds(Date.now() - 60_000), 'past')).text).toBe(OK);
    expect((await c.schedule(later, q, 1000, LONG_TTL, future, 'later', '-priority=99')).text).toBe(OK);
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 2, 1));
    expect(await drain(c, q)).toEqual([held, past]);
    expect(await jobOf(c, later)).toMatchObject({ state: '0', time: future, priority: '99' });
    for (const id of [held, past, later]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('run: checks in Workq\'s order; one unknown flag is ignored, two flags are refused', async () => {
    const c = await open();
    const q = 'cmd-run';
    const [u, held] = ids(2);
    expect((await c.add(held, q, 60000, LONG_TTL, 'h')).text).toBe(OK);
    expect((await c.request('result', `run ${u} ${q} 1000 100\r\n`)).text).toBe(clientError('Invalid command args'));
    const refused: Array<[string, string, string]> = [
      [`run not-a-uuid q! x x`, '-priority=x', 'Invalid ID'],
      [`run ${u} q! x x`, '-priority=x', 'Invalid TTR'],
      // priority, then the wait-timeout, then id acceptable, name rules, ttr range
      [`run ${u} q! 0 x`, '-priority=x', 'Invalid Priority'],
      [`run ${u} q! 0 x`, '', 'Invalid wait timeout'],
      [`run ${u} q! 0 86400001`, '', 'Invalid wait timeout'],
      [`run ${NIL_ID} q! 0 100`, '', 'Invalid ID'],
      [`run ${u} q! 0 100`, '', 'Invalid Name'],
      [`run ${u} ${q} 0 100`, '', 'Invalid TTR'],
      [`run ${held} ${q} 1000 100`, '', 'Duplicate job'],
      [`run ${u} ${q} 1000 100`, '-priority=1 -other=2', 'Invalid command args'],
    ];
    for (const [line, flags, error] of refused) {
      expect((await c.request('result', withBlock(line, 'p', flags))).text, `${line} ${flags}`).toBe(clientError(error));
    }
    expect(await jobOf(c, u)).toBeUndefined();
    expect((await c.run(u, 'cmd-run-alone', 1000, 100, 'p', '-max-attempts=3')).text).toBe(TIMEOUT);
    expect((await c.delete(held)).text).toBe(OK);
  });

  it('lease, complete, fail, delete, result: argument checks and their order', async () => {
    const c = await open();
    const q = 'cmd-misc';
    const [u, unknown] = ids(2);
    const cases: Array<[string | Buffer, string]> = [
      ['lease\r\n', 'Invalid command args'],
      [`lease ${q}\r\n`, 'Invalid command args'],
      [`lease ${q} 100 -x=1\r\n`, 'Invalid command args'],
      [`lease -x=1 ${q} 100\r\n`, 'Invalid command args'],
      // the timeout before the names
      ['lease q! x\r\n', 'Invalid wait timeout'],
      [`lease ${q} -1\r\n`, 'Invalid wait timeout'],
      [`lease ${q} 86400001\r\n`, 'Invalid wait timeout'],
      ['lease q! 100\r\n', 'Invalid Name'],
      [`lease ${q} q! 100\r\n`, 'Invalid Name'],
      ['lease .hidden 0\r\n', 'Invalid Name'],
      ['lease x.deleted.7 0\r\n', 'Invalid Name'],
      [`complete ${u}\r\n`, 'Invalid command args'],
      [withBlock('complete not-a-uuid', 'ok'), 'Invalid ID'],
      [withBlock(`complete ${NIL_ID}`, 'ok'), 'Invalid ID'],
      [`fail ${u}\r\n`, 'Invalid command args'],
      [withBlock('fail not-a-uuid', 'ok'), 'Invalid ID'],
      ['delete\r\n', 'Invalid command args'],
      [`delete ${u} ${unknown}\r\n`, 'Invalid command args'],
      [`delete ${u} -x=1\r\n`, 'Invalid command args'],
      ['delete not-a-uuid\r\n', 'Invalid ID'],
      [`delete ${NIL_ID}\r\n`, 'Invalid ID'],
      [`result ${u}\r\n`, 'Invalid command args'],
      [`result ${u} 100 -x=1\r\n`, 'Invalid command args'],
      // the id, then the timeout, then existence
      ['result not-a-uuid x\r\n', 'Invalid ID'],
      [`result ${NIL_ID} x\r\n`, 'Invalid ID'],
      [`result ${unknown} x\r\n`, 'Invalid wait timeout'],
      [`result ${unknown} 86400001\r\n`, 'Invalid wait timeout'],
    ];
    for (const [bytes, error] of cases) {
      expect((await c.request('ok', bytes)).text, bytes.toString()).toBe(clientError(error));
    }
    expect((await c.complete(unknown, 'ok')).text).toBe(NOT_FOUND);
    expect((await c.fail(unknown, 'ok')).text).toBe(NOT_FOUND);
    expect((await c.delete(unknown)).text).toBe(NOT_FOUND);
    expect((await c.result(unknown, 100)).text).toBe(NOT_FOUND);
  });

  it('inspect: argument checks and their order', async () => {
    const c = await open();
    const cases: Array<[string, string]> = [
      ['inspect', clientError('Invalid command args')],
      ['inspect nothing', clientError('Unknown command')],
      ['inspect Server', clientError('Unknown command')],
      ['inspect server x', clientError('Invalid command args')],
      ['inspect server -x=1', clientError('Invalid command args')],
      ['inspect queues 0', clientError('Invalid command args')],
      ['inspect queues 0 10 x', clientError('Invalid command args')],
      ['inspect queues 0 10 -x=1', clientError('Invalid command args')],
      ['inspect queues x 0', clientError('Invalid cursor offset')],
      ['inspect queues -1 10', clientError('Invalid cursor offset')],
      ['inspect queues 4294967296 10', clientError('Invalid cursor offset')],
      ['inspect queues 0 0', clientError('Invalid limit')],
      ['inspect queues 0 101', clientError('Invalid limit')],
      ['inspect queues 0 x', clientError('Invalid limit')],
      ['inspect queues 4294967295 100', '+OK 0\r\n'],
      ['inspect queue', clientError('Invalid command args')],
      ['inspect queue a b', clientError('Invalid command args')],
      ['inspect queue q!', clientError('Invalid Name')],
      ['inspect queue never-named-queue', NOT_FOUND],
      ['inspect job', clientError('Invalid command args')],
      ['inspect job not-a-uuid', clientError('Invalid ID')],
      [`inspect job ${randomUUID()}`, NOT_FOUND],
    ];
    for (const what of ['jobs', 'scheduled-jobs']) {
      cases.push(
        [`inspect ${what} never-named-queue 0`, clientError('Invalid command args')],
        [`inspect ${what} never-named-queue 0 10 -x=1`, clientError('Invalid command args')],
        // name, offset, limit, then the queue's existence
        [`inspect ${what} q! x 0`, clientError('Invalid Name')],
        [`inspect ${what} never-named-queue x 0`, clientError('Invalid cursor offset')],
        [`inspect ${what} never-named-queue 0 0`, clientError('Invalid limit')],
        [`inspect ${what} never-named-queue 0 101`, clientError('Invalid limit')],
        [`inspect ${what} never-named-queue 0 100`, NOT_FOUND],
      );
    }
    for (const [line, reply] of cases) expect((await c.request('inspect', `${line}\r\n`)).text, line).toBe(reply);
  });

  it('inspect job: every key with its value, 13 with time for a scheduled job, and states 0..4', async () => {
    const c = await open();
    const q = 'cmd-record';
    const [a, b, s] = ids(3);
    const before = Date.now();
    expect((await c.add(a, q, 1500, LONG_TTL, 'pong', '-priority=10 -max-attempts=3 -max-fails=1')).text).toBe(OK);
    const after = Date.now();
    const r = await c.inspect('job', a);
    const m = new RegExp(
      `^\\+OK 1\\r\\n${a} 12\\r\\nname ${q}\\r\\nttr 1500\\r\\nttl ${LONG_TTL}\\r\\npayload-size 4\\r\\npayload pong\\r\\nmax-attempts 3\\r\\nattempts 0\\r\\n` +
        'max-fails 1\\r\\nfails 0\\r\\npriority 10\\r\\nstate 0\\r\\ncreated (\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ)\\r\\n$',
    ).exec(r.text);
    expect(m, r.text).not.toBeNull();
    expect(m![1]! >= isoSeconds(before) && m![1]! <= isoSeconds(after)).toBe(true);
    const state = async (id: string): Promise<string | undefined> => (await jobOf(c, id))?.['state'];
    expect(leasedJob(await c.lease([q], 0)).id).toBe(a);
    expect(await jobOf(c, a)).toMatchObject({ state: '4', attempts: '1' });
    expect((await c.fail(a, 'bad')).text).toBe(OK);
    expect(await jobOf(c, a)).toMatchObject({ state: '2', attempts: '1', fails: '1' });
    expect((await c.add(b, q, 1500, LONG_TTL, 'b', '-max-fails=2')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(b);
    expect((await c.fail(b, 'again')).text).toBe(OK);
    expect(await jobOf(c, b)).toMatchObject({ state: '3', attempts: '1', fails: '1' });
    expect((await c.complete(b, 'done')).text).toBe(OK);
    expect(await state(b)).toBe('1');
    const time = isoSeconds(Date.now() + 3_600_000);
    expect((await c.schedule(s, q, 2000, 5000, time, '')).text).toBe(OK);
    const [record] = recordsOf(await c.inspect('job', s));
    expect(record!.label).toBe(s);
    expect(record!.keys).toEqual(['name', 'ttr', 'ttl', 'payload-size', 'payload', 'max-attempts', 'attempts', 'max-fails', 'fails', 'priority', 'state', 'created', 'time']);
    expect(record!.values).toMatchObject({ name: q, ttr: '2000', ttl: '5000', 'payload-size': '0', payload: '', state: '0', time });
    for (const id of [a, b, s]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('leases by priority, then add before scheduled, then scheduled time, then created; inspect jobs in that order with offset and limit', async () => {
    const c = await open();
    const q = 'cmd-order';
    // Ascending ids: i5 < i6, so only the created order can put i6 first.
    const [i1, i2, i3, i4, i5, i6, i7] = ids(7);
    const now = Date.now();
    expect((await c.schedule(i3, q, 60000, LONG_TTL, isoSeconds(now - 60_000), '3', '-priority=5')).text).toBe(OK);
    expect((await c.schedule(i1, q, 60000, LONG_TTL, isoSeconds(now - 60_000), '1')).text).toBe(OK);
    expect((await c.schedule(i2, q, 60000, LONG_TTL, isoSeconds(now - 120_000), '2')).text).toBe(OK);
    expect((await c.add(i6, q, 60000, LONG_TTL, '6')).text).toBe(OK);
    await nextMs();
    expect((await c.add(i5, q, 60000, LONG_TTL, '5')).text).toBe(OK);
    expect((await c.add(i4, q, 60000, LONG_TTL, '4', '-priority=5')).text).toBe(OK);
    expect((await c.add(i7, q, 60000, LONG_TTL, '7', '-priority=-1')).text).toBe(OK);
    const order = [i4, i3, i6, i5, i2, i1, i7];
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 7, 0));
    expect(await listed(c, 'jobs', q)).toEqual(order);
    expect(await listed(c, 'jobs', q, 2, 3)).toEqual(order.slice(2, 5));
    expect(await listed(c, 'jobs', q, 6, 100)).toEqual(order.slice(6));
    expect((await c.inspect('jobs', q, 7, 100)).text).toBe('+OK 0\r\n');
    const records = recordsOf(await c.inspect('jobs', q, 0, 2));
    expect(records.map((r) => r.keys.length)).toEqual([12, 13]);
    expect(await drain(c, q)).toEqual(order);
    // Leased jobs are neither ready nor listed.
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 0));
    expect((await c.inspect('jobs', q, 0, 100)).text).toBe('+OK 0\r\n');
    for (const id of order) expect((await c.delete(id)).text).toBe(OK);
  });

  it('inspect scheduled-jobs: priority, then time, then created, with offset and limit (as the reference server)', async () => {
    const c = await open();
    const q = 'cmd-sched-order';
    const [s1, s2, s3, s4] = ids(4);
    const now = Date.now();
    expect((await c.schedule(s1, q, 1000, LONG_TTL, isoSeconds(now + 30_000), '1')).text).toBe(OK);
    expect((await c.schedule(s4, q, 1000, LONG_TTL, isoSeconds(now + 20_000), '4')).text).toBe(OK);
    await nextMs();
    expect((await c.schedule(s2, q, 1000, LONG_TTL, isoSeconds(now + 20_000), '2')).text).toBe(OK);
    expect((await c.schedule(s3, q, 1000, LONG_TTL, isoSeconds(now + 40_000), '3', '-priority=5')).text).toBe(OK);
    const order = [s3, s4, s2, s1];
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 4));
    expect(await listed(c, 'scheduled-jobs', q)).toEqual(order);
    expect(await listed(c, 'scheduled-jobs', q, 1, 2)).toEqual([s4, s2]);
    expect((await c.inspect('scheduled-jobs', q, 4, 10)).text).toBe('+OK 0\r\n');
    expect((await c.inspect('jobs', q, 0, 10)).text).toBe('+OK 0\r\n');
    expect(recordsOf(await c.inspect('scheduled-jobs', q, 0, 100)).map((r) => r.keys.length)).toEqual([13, 13, 13, 13]);
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    for (const id of order) expect((await c.delete(id)).text).toBe(OK);
  });

  it('lease takes from any of several names, and names the queue of the job in its reply', async () => {
    const c = await open();
    const x = randomUUID();
    expect((await c.add(x, 'ln-b', 2500, LONG_TTL, 'in b')).text).toBe(OK);
    expect((await c.request('lease', 'lease ln-a ln-b ln-c 0\r\n')).text).toBe(`+OK 1\r\n${x} ln-b 2500 4\r\nin b\r\n`);
    expect((await c.lease(['ln-a', 'ln-b', 'ln-c'], 0)).text).toBe(TIMEOUT);
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('a waiting lease gets a job added later on another connection, also to a name that had no queue', async () => {
    const w = await open();
    const c = await open();
    const x = randomUUID();
    expect(fs.existsSync(t().queueDir('lw-new-2'))).toBe(false);
    const waiting = w.lease(['lw-new-1', 'lw-new-2'], 10_000);
    // The lease has reached the server once its names are recorded.
    await waitFor(async () => (await c.inspect('queue', 'lw-new-2')).type === 'records', 5_000, 'the lease to record its names');
    expect((await c.add(x, 'lw-new-2', 3000, LONG_TTL, 'new')).text).toBe(OK);
    expect(leasedJob(await waiting)).toEqual({ id: x, name: 'lw-new-2', ttr: 3000, payload: Buffer.from('new') });
    expect(fs.existsSync(t().queueDir('lw-new-2'))).toBe(true);
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('lease with wait 0 is a non-blocking poll: a ready job if there is one, else -TIMEOUT (the reference server always times out)', async () => {
    const c = await open();
    const q = 'lp-poll';
    const x = randomUUID();
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    expect((await c.add(x, q, 1000, LONG_TTL, 'x')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(x);
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('a lease waiting on a connection that closed takes no job', async () => {
    const c = await open();
    const w = await open();
    const q = 'lc-closed';
    const x = randomUUID();
    w.send(`lease ${q} 10000\r\n`);
    await waitFor(async () => (await c.inspect('queue', q)).type === 'records', 5_000, 'the lease to record its name');
    // The FIN is on its way before the add is even sent; a round trip more lets the server read it.
    w.destroy();
    await serverKeys(c);
    expect((await c.add(x, q, 1000, LONG_TTL, 'x')).text).toBe(OK);
    expect(await jobOf(c, x)).toMatchObject({ state: '0', attempts: '0' });
    expect(leasedJob(await c.lease([q], 0)).id).toBe(x);
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('a client that sends its commands and shuts its side gets every reply; a waiting lease then answers at once, a poll still takes its job', async () => {
    const c = await open();
    const w = await open();
    const q = 'lc-half';
    const [x, y] = [randomUUID(), randomUUID()];
    w.send(`add ${x} ${q} 60000 ${LONG_TTL} 1\r\nx\r\nlease ${q} 0\r\nlease ${q} 86400000\r\ninspect queue ${q}\r\n`);
    w.end();
    expect(await w.lines(7)).toBe(`+OK\r\n+OK 1\r\n${x} ${q} 60000 1\r\nx\r\n-TIMEOUT\r\n+OK 1\r\n${q} 2\r\n`);
    await w.closed();
    // The waiting lease took nothing for the client that left.
    expect((await c.add(y, q, 1000, LONG_TTL, 'y')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(y);
    for (const id of [x, y]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('answers ids in lower case whatever case was sent; ids are unique across queues', async () => {
    const c = await open();
    const lower = randomUUID();
    const upper = lower.toUpperCase();
    expect((await c.add(upper, 'case-a', 1000, LONG_TTL, 'u')).text).toBe(OK);
    expect((await c.add(lower, 'case-b', 1000, LONG_TTL, 'l')).text).toBe(clientError('Duplicate job'));
    expect(leasedJob(await c.lease(['case-a'], 0)).id).toBe(lower);
    expect(recordsOf(await c.inspect('job', upper))[0]!.label).toBe(lower);
    expect((await c.complete(upper, 'ok')).text).toBe(OK);
    expect((await c.result(upper, 0)).text).toBe(resultReply(lower, true, 'ok'));
    expect((await c.delete(upper)).text).toBe(OK);
  });

  it('Duplicate job across queues and after completion until delete; the id is free again after delete', async () => {
    const c = await open();
    const x = randomUUID();
    const future = isoSeconds(Date.now() + 3_600_000);
    expect((await c.add(x, 'dj-a', 1000, LONG_TTL, 'a')).text).toBe(OK);
    expect((await c.add(x, 'dj-b', 1000, LONG_TTL, 'b')).text).toBe(clientError('Duplicate job'));
    expect((await c.schedule(x, 'dj-b', 1000, LONG_TTL, future, 'b')).text).toBe(clientError('Duplicate job'));
    expect((await c.run(x, 'dj-b', 1000, 100, 'b')).text).toBe(clientError('Duplicate job'));
    expect(leasedJob(await c.lease(['dj-a'], 0)).id).toBe(x);
    expect((await c.complete(x, 'done')).text).toBe(OK);
    expect((await c.add(x, 'dj-b', 1000, LONG_TTL, 'b')).text).toBe(clientError('Duplicate job'));
    expect((await c.delete(x)).text).toBe(OK);
    expect((await c.add(x, 'dj-b', 1000, LONG_TTL, 'b')).text).toBe(OK);
    expect(await jobOf(c, x)).toMatchObject({ name: 'dj-b', payload: 'b', state: '0' });
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('complete works on a job never leased, a scheduled one before its time, and answers Duplicate result once final', async () => {
    const c = await open();
    const q = 'cc-any';
    const [n, s] = ids(2);
    expect((await c.add(n, q, 1000, LONG_TTL, 'n')).text).toBe(OK);
    expect((await c.schedule(s, q, 1000, LONG_TTL, isoSeconds(Date.now() + 3_600_000), 's')).text).toBe(OK);
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 1, 1));
    expect((await c.complete(n, 'never leased')).text).toBe(OK);
    expect((await c.complete(s, '')).text).toBe(OK);
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 0));
    expect(await jobOf(c, n)).toMatchObject({ state: '1', attempts: '0' });
    expect(await jobOf(c, s)).toMatchObject({ state: '1' });
    expect((await c.result(n, 0)).text).toBe(resultReply(n, true, 'never leased'));
    expect((await c.result(s, 0)).text).toBe(resultReply(s, true, ''));
    for (const id of [n, s]) {
      expect((await c.complete(id, 'x')).text).toBe(clientError('Duplicate result'));
      expect((await c.fail(id, 'x')).text).toBe(clientError('Duplicate result'));
    }
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    for (const id of [n, s]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('delete removes a job in any state with its result; later commands on it answer -NOT-FOUND', async () => {
    const c = await open();
    const q = 'del-any';
    const [ready, leased, sched, done, failed] = ids(5);
    expect((await c.add(leased, q, 60000, LONG_TTL, 'l')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(leased);
    expect((await c.add(ready, q, 60000, LONG_TTL, 'r')).text).toBe(OK);
    expect((await c.schedule(sched, q, 60000, LONG_TTL, isoSeconds(Date.now() + 3_600_000), 's')).text).toBe(OK);
    expect((await c.add(done, q, 60000, LONG_TTL, 'd')).text).toBe(OK);
    expect((await c.complete(done, 'd')).text).toBe(OK);
    expect((await c.add(failed, q, 60000, LONG_TTL, 'f')).text).toBe(OK);
    expect((await c.fail(failed, 'f')).text).toBe(OK);
    for (const id of [ready, leased, sched, done, failed]) {
      expect((await c.delete(id)).text).toBe(OK);
      expect(await jobOf(c, id)).toBeUndefined();
      expect((await c.delete(id)).text).toBe(NOT_FOUND);
      expect((await c.complete(id, 'x')).text).toBe(NOT_FOUND);
      expect((await c.fail(id, 'x')).text).toBe(NOT_FOUND);
      expect((await c.result(id, 0)).text).toBe(NOT_FOUND);
    }
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 0));
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    expect((await c.add(done, q, 60000, LONG_TTL, 'again')).text).toBe(OK);
    expect((await c.delete(done)).text).toBe(OK);
  });

  it('fail with max-fails retries at the old place (state 3), and the last one is final with its result', async () => {
    const c = await open();
    const q = 'fail-retry';
    const [f, g, h, k] = ids(4);
    expect((await c.add(f, q, 60000, LONG_TTL, 'f', '-max-fails=2')).text).toBe(OK);
    expect((await c.add(g, q, 60000, LONG_TTL, 'g')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(f);
    expect((await c.fail(f, 'first')).text).toBe(OK);
    expect(await jobOf(c, f)).toMatchObject({ state: '3', attempts: '1', fails: '1' });
    expect((await c.result(f, 0)).text).toBe(TIMEOUT);
    expect(await listed(c, 'jobs', q)).toEqual([f, g]);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(f);
    expect((await c.fail(f, 'second')).text).toBe(OK);
    expect(await jobOf(c, f)).toMatchObject({ state: '2', attempts: '2', fails: '2' });
    expect((await c.result(f, 0)).text).toBe(resultReply(f, false, 'second'));
    expect((await c.fail(f, 'third')).text).toBe(clientError('Duplicate result'));
    expect((await c.complete(f, 'third')).text).toBe(clientError('Duplicate result'));
    expect(await drain(c, q)).toEqual([g]);
    // The default max-fails 0: a fail is final, even before any lease.
    expect((await c.fail(g, '')).text).toBe(OK);
    expect((await c.result(g, 0)).text).toBe(resultReply(g, false, ''));
    expect((await c.add(h, q, 60000, LONG_TTL, 'h')).text).toBe(OK);
    expect((await c.fail(h, 'never leased')).text).toBe(OK);
    expect(await jobOf(c, h)).toMatchObject({ state: '2', attempts: '0', fails: '1' });
    // Retries left but the attempts used up: final.
    expect((await c.add(k, q, 60000, LONG_TTL, 'k', '-max-fails=3 -max-attempts=1')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(k);
    expect((await c.fail(k, 'k')).text).toBe(OK);
    expect(await jobOf(c, k)).toMatchObject({ state: '2', fails: '1' });
    expect((await c.result(k, 0)).text).toBe(resultReply(k, false, 'k'));
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    for (const id of [f, g, h, k]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('inspect queues: byte-wise order of every queue, lease-only names without a directory, cursor and limit', async () => {
    const c = await open();
    const mine = ['qs--', 'qs-.x', 'qs-0', 'qs-A', 'qs-_', 'qs-a'];
    for (const name of ['qs-a', 'qs-A', 'qs-_', 'qs-0', 'qs-.x', 'qs--']) expect((await c.lease([name], 0)).text).toBe(TIMEOUT);
    const [x, s] = ids(2);
    expect((await c.add(x, 'qs-A', 1000, LONG_TTL, 'x')).text).toBe(OK);
    expect((await c.schedule(s, 'qs-A', 1000, LONG_TTL, isoSeconds(Date.now() + 3_600_000), 's')).text).toBe(OK);
    // Every page, 3 at a time, until +OK 0.
    const all: InspectRecord[] = [];
    for (;;) {
      const page = await c.inspect('queues', all.length, 3);
      if (page.text === '+OK 0\r\n') break;
      const records = recordsOf(page);
      expect(records.length).toBeGreaterThan(0);
      expect(records.length).toBeLessThanOrEqual(3);
      all.push(...records);
    }
    const names = all.map((r) => r.label);
    expect(names).toEqual([...names].sort((p, q) => Buffer.compare(Buffer.from(p), Buffer.from(q))));
    expect(new Set(names).size).toBe(names.length);
    expect(names.filter((n) => n.startsWith('qs-'))).toEqual(mine);
    for (const record of all) expect(record.keys).toEqual(['ready-len', 'scheduled-len']);
    const shown = Object.fromEntries(all.map((r) => [r.label, r.values]));
    expect(shown['qs-A']).toEqual({ 'ready-len': '1', 'scheduled-len': '1' });
    for (const name of mine.filter((n) => n !== 'qs-A')) expect(shown[name], name).toEqual({ 'ready-len': '0', 'scheduled-len': '0' });
    const at = names.indexOf('qs--');
    expect(recordsOf(await c.inspect('queues', at, 2)).map((r) => r.label)).toEqual(['qs--', 'qs-.x']);
    expect(recordsOf(await c.inspect('queues', names.length - 1, 100)).map((r) => r.label)).toEqual([names[names.length - 1]]);
    expect((await c.inspect('queues', names.length, 100)).text).toBe('+OK 0\r\n');
    expect((await c.inspect('queue', 'qs-a')).text).toBe(queueReply('qs-a', 0, 0));
    expect((await c.inspect('jobs', 'qs-a', 0, 10)).text).toBe('+OK 0\r\n');
    expect(fs.existsSync(t().queueDir('qs-a'))).toBe(false);
    expect(fs.existsSync(t().queueDir('qs-A'))).toBe(true);
    for (const id of [x, s]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('inspect server: server 3, active-clients counts open connections, evicted-jobs, started', async () => {
    const c = await open();
    await waitFor(async () => (await serverKeys(c))['active-clients'] === '1', 5_000, 'only this connection to be open');
    const r = await c.inspect('server');
    expect(r.text).toMatch(/^\+OK 1\r\nserver 3\r\nactive-clients 1\r\nevicted-jobs \d+\r\nstarted \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\r\n$/);
    expect((await serverKeys(c))['started']! <= isoSeconds(Date.now())).toBe(true);
    const d = await open();
    const e = await open();
    // Each has been served, so the server has taken both connections.
    for (const other of [d, e]) await serverKeys(other);
    expect(await serverKeys(c)).toMatchObject({ 'active-clients': '3' });
    d.destroy();
    await waitFor(async () => (await serverKeys(c))['active-clients'] === '2', 5_000, 'the server to see the close');
  });

  it('by default accepts any well-formed non-nil UUID (the v1 id of Workq\'s examples) and a TTL over 30 days', async () => {
    const c = await open();
    const q = 'prof-default';
    expect((await c.add(V1_ID, q, 1000, 2_592_000_001, 'v1')).text).toBe(OK);
    expect((await c.add(V4_OTHER_VARIANT, q, 1000, LONG_TTL, 'variant')).text).toBe(OK);
    expect(await drain(c, q)).toEqual([V1_ID, V4_OTHER_VARIANT]);
    expect((await c.complete(V1_ID, 'ok')).text).toBe(OK);
    expect((await c.result(V1_ID, 0)).text).toBe(resultReply(V1_ID, true, 'ok'));
    expect((await c.delete(V1_ID)).text).toBe(OK);
    expect(await jobOf(c, V1_ID)).toBeUndefined();
    expect((await c.delete(V1_ID)).text).toBe(NOT_FOUND);
    expect((await c.delete(V4_OTHER_VARIANT)).text).toBe(OK);
  });
});

describe('workq: timers and waits', () => {
  const doors = sharedProtocols({ workq: {} });
  const open = workqClients(() => doors.port('workq'));

  it('a lease whose TTR runs out is requeued, and a waiting lease gets it', async () => {
    const c = await open();
    const w = await open();
    const q = 'ttr-wake';
    const x = randomUUID();
    expect((await c.add(x, q, 200, LONG_TTL, 'x')).text).toBe(OK);
    const asked = Date.now();
    expect(leasedJob(await c.lease([q], 0))).toEqual({ id: x, name: q, ttr: 200, payload: Buffer.from('x') });
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    // The requeue wakes this lease; it cannot come before the TTR.
    expect(leasedJob(await w.lease([q], 5_000)).id).toBe(x);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(195);
    expect(await jobOf(c, x)).toMatchObject({ state: '4', attempts: '2' });
    expect((await c.complete(x, 'ok')).text).toBe(OK);
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('a job back from a TTR expiry keeps its place, ahead of newer jobs', async () => {
    const c = await open();
    const q = 'ttr-place';
    const [x, y, z] = ids(3);
    expect((await c.add(x, q, 150, LONG_TTL, 'x')).text).toBe(OK);
    expect((await c.add(y, q, 150, LONG_TTL, 'y')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(x);
    expect((await c.add(z, q, 150, LONG_TTL, 'z')).text).toBe(OK);
    await waitFor(async () => (await c.inspect('queue', q)).text === queueReply(q, 3, 0), 5_000, 'the TTR requeue');
    expect(await jobOf(c, x)).toMatchObject({ state: '3', attempts: '1' });
    expect(await listed(c, 'jobs', q)).toEqual([x, y, z]);
    expect(await drain(c, q)).toEqual([x, y, z]);
    for (const id of [x, y, z]) expect((await c.delete(id)).text).toBe(OK);
  });

  it('max-attempts: the last TTR expiry makes the job FAILED with success 0 and an empty result', async () => {
    const c = await open();
    const q = 'ttr-attempts';
    const x = randomUUID();
    expect((await c.add(x, q, 100, LONG_TTL, 'x', '-max-attempts=2')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(x);
    expect(leasedJob(await c.lease([q], 5_000)).id).toBe(x);
    // The second expiry makes it final, and wakes this waiter.
    expect((await c.result(x, 5_000)).text).toBe(`+OK 1\r\n${x} 0 0\r\n\r\n`);
    expect(await jobOf(c, x)).toMatchObject({ state: '2', attempts: '2', fails: '0' });
    expect((await c.lease([q], 300)).text).toBe(TIMEOUT);
    expect((await c.complete(x, 'late')).text).toBe(clientError('Duplicate result'));
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('complete works on a job whose lease ran out, and on one another worker now holds; that worker then gets Duplicate result', async () => {
    const a = await open();
    const b = await open();
    const q = 'ttr-complete';
    const [e, h] = ids(2);
    expect((await a.add(e, q, 100, LONG_TTL, 'e')).text).toBe(OK);
    expect(leasedJob(await a.lease([q], 0)).id).toBe(e);
    await waitFor(async () => (await jobOf(a, e))?.['state'] === '3', 5_000, 'the TTR requeue');
    expect((await a.complete(e, 'late but fine')).text).toBe(OK);
    expect((await a.result(e, 0)).text).toBe(resultReply(e, true, 'late but fine'));
    expect((await a.add(h, q, 100, LONG_TTL, 'h')).text).toBe(OK);
    expect(leasedJob(await a.lease([q], 0)).id).toBe(h);
    expect(leasedJob(await b.lease([q], 5_000)).id).toBe(h);
    expect((await a.complete(h, 'from a')).text).toBe(OK);
    expect((await b.complete(h, 'from b')).text).toBe(clientError('Duplicate result'));
    expect((await b.result(h, 0)).text).toBe(resultReply(h, true, 'from a'));
    for (const id of [e, h]) expect((await a.delete(id)).text).toBe(OK);
  });

  it('removes a job at its TTL in every state, counts the unfinished ones as evicted, and frees the id; a schedule TTL counts from its time', async () => {
    const c = await open();
    const q = 'ttl-all';
    const [leased, ready, done, failed, sched] = ids(5);
    const evicted = Number((await serverKeys(c))['evicted-jobs']);
    const t0 = Date.now();
    expect((await c.add(leased, q, 60000, 1000, 'l')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(leased);
    expect((await c.add(ready, q, 60000, 1000, 'r')).text).toBe(OK);
    expect((await c.add(done, q, 60000, 1000, 'd')).text).toBe(OK);
    expect((await c.complete(done, 'ok')).text).toBe(OK);
    expect((await c.add(failed, q, 60000, 1000, 'f')).text).toBe(OK);
    expect((await c.fail(failed, 'no')).text).toBe(OK);
    // Ready at t0 + 1.5 s, gone at t0 + 2.5 s.
    const time = t0 + 1_500;
    expect((await c.schedule(sched, q, 60000, 1000, new Date(time).toISOString(), 's')).text).toBe(OK);
    // A run job that timed out is removed, not evicted.
    expect((await c.run(randomUUID(), 'ttl-run', 1000, 100, 'r')).text).toBe(TIMEOUT);
    expect((await c.result(done, 0)).text).toBe(resultReply(done, true, 'ok'));
    await waitFor(
      async () => {
        for (const id of [leased, ready, done, failed]) if ((await jobOf(c, id)) !== undefined) return false;
        return true;
      },
      5_000,
      'the four jobs to expire',
    );
    expect(Date.now()).toBeGreaterThanOrEqual(t0 + 1_000);
    // A precondition, not a speed claim: the scheduled job's TTL (from its time) has not run out yet.
    expect(Date.now()).toBeLessThan(time + 1_000 - 100);
    expect(await jobOf(c, sched)).toMatchObject({ state: '0' });
    await waitFor(async () => (await jobOf(c, sched)) === undefined, 5_000, 'the scheduled job to expire');
    expect(Date.now()).toBeGreaterThanOrEqual(time + 1_000 - 5);
    expect((await c.complete(leased, 'late')).text).toBe(NOT_FOUND);
    expect((await c.result(done, 0)).text).toBe(NOT_FOUND);
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 0));
    expect((await serverKeys(c))['evicted-jobs']).toBe(String(evicted + 3));
    expect((await c.add(ready, q, 60000, LONG_TTL, 'again')).text).toBe(OK);
    expect((await c.delete(ready)).text).toBe(OK);
  });

  it('a scheduled job becomes ready at its time (a fractional second kept) and wakes a waiting lease', async () => {
    const c = await open();
    const q = 'sched-ready';
    const x = randomUUID();
    const time = Date.now() + 700;
    expect((await c.schedule(x, q, 1000, LONG_TTL, new Date(time).toISOString(), 'x')).text).toBe(OK);
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 1));
    expect(await listed(c, 'scheduled-jobs', q)).toEqual([x]);
    expect(leasedJob(await c.lease([q], 5_000)).id).toBe(x);
    expect(Date.now()).toBeGreaterThanOrEqual(time - 2);
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('run waits for the result another connection completes; then the job is gone and its id free', async () => {
    const a = await open();
    const b = await open();
    const q = 'run-done';
    const x = randomUUID();
    const lease = b.lease([q], 5_000);
    const run = watched(a.run(x, q, 5_000, 5_000, 'work', '-max-attempts=3'));
    expect(leasedJob(await lease)).toEqual({ id: x, name: q, ttr: 5000, payload: Buffer.from('work') });
    const [record] = recordsOf(await b.inspect('job', x));
    expect(record!.keys).toHaveLength(12);
    expect(record!.values).toMatchObject({ name: q, ttr: '5000', ttl: '0', 'max-attempts': '0', 'max-fails': '0', attempts: '1', state: '4' });
    expect(run.settled()).toBe(false);
    expect((await b.complete(x, 'done')).text).toBe(OK);
    expect((await run.p).text).toBe(resultReply(x, true, 'done'));
    expect((await b.inspect('job', x)).text).toBe(NOT_FOUND);
    expect((await b.result(x, 0)).text).toBe(NOT_FOUND);
    expect((await b.complete(x, 'again')).text).toBe(NOT_FOUND);
    expect((await b.delete(x)).text).toBe(NOT_FOUND);
    expect((await b.add(x, q, 1000, LONG_TTL, 'reused')).text).toBe(OK);
    expect((await b.delete(x)).text).toBe(OK);
    // A fail reaches the waiting run with success 0.
    const y = randomUUID();
    const lease2 = b.lease([q], 5_000);
    const run2 = a.run(y, q, 5_000, 5_000, 'work');
    expect(leasedJob(await lease2).id).toBe(y);
    expect((await b.fail(y, 'oops')).text).toBe(OK);
    expect((await run2).text).toBe(resultReply(y, false, 'oops'));
    expect((await b.inspect('job', y)).text).toBe(NOT_FOUND);
  });

  it('run answers -TIMEOUT when nobody takes the job, and removes it', async () => {
    const c = await open();
    const q = 'run-nobody';
    const x = randomUUID();
    const asked = Date.now();
    expect((await c.run(x, q, 1000, 200, 'x')).text).toBe(TIMEOUT);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(195);
    expect((await c.inspect('job', x)).text).toBe(NOT_FOUND);
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 0));
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
  });

  it('run phase 2: a job leased when the wait-timeout runs out is waited for until its TTR deadline', async () => {
    const a = await open();
    const b = await open();
    const q = 'run-phase2';
    const [x, y] = ids(2);
    // Completed within the TTR, after the wait-timeout.
    const lease = b.lease([q], 5_000);
    const sent = Date.now();
    const run = watched(a.run(x, q, 2_000, 300, 'x'));
    expect(leasedJob(await lease).id).toBe(x);
    await untilPast(sent + 600);
    expect(run.settled()).toBe(false);
    expect((await b.complete(x, 'late')).text).toBe(OK);
    expect((await run.p).text).toBe(resultReply(x, true, 'late'));
    expect(Date.now()).toBeLessThan(sent + 2_000);
    // Never completed: -TIMEOUT at the TTR deadline, not at the wait-timeout; the job is removed.
    const lease2 = b.lease([q], 5_000);
    const sent2 = Date.now();
    const run2 = a.run(y, q, 700, 100, 'y');
    expect(leasedJob(await lease2).id).toBe(y);
    expect((await run2).text).toBe(TIMEOUT);
    expect(Date.now()).toBeGreaterThanOrEqual(sent2 + 700 - 5);
    expect((await b.complete(y, 'too late')).text).toBe(NOT_FOUND);
    expect((await b.inspect('job', y)).text).toBe(NOT_FOUND);
    expect((await b.lease([q], 0)).text).toBe(TIMEOUT);
  });

  it('result answers at once when final, waits for a later one, wakes every waiter (the reference wakes one), and times out', async () => {
    const c = await open();
    const q = 'res-wait';
    const [a, b, n, d] = ids(4);
    expect((await c.add(a, q, 60000, LONG_TTL, 'a')).text).toBe(OK);
    expect((await c.complete(a, 'x')).text).toBe(OK);
    expect((await c.result(a, 0)).text).toBe(resultReply(a, true, 'x'));
    expect((await c.result(a, 86_400_000)).text).toBe(resultReply(a, true, 'x'));
    expect((await c.add(b, q, 60000, LONG_TTL, 'b')).text).toBe(OK);
    const waiters = await Promise.all([open(), open(), open()]);
    const waiting = waiters.map((w) => watched(w.result(b, 10_000)));
    expect(leasedJob(await c.lease([q], 0)).id).toBe(b);
    expect(waiting.some((w) => w.settled())).toBe(false);
    expect((await c.fail(b, 'no')).text).toBe(OK);
    for (const w of waiting) expect((await w.p).text).toBe(resultReply(b, false, 'no'));
    expect((await c.add(n, q, 60000, LONG_TTL, 'n')).text).toBe(OK);
    const asked = Date.now();
    expect((await c.result(n, 150)).text).toBe(TIMEOUT);
    expect(Date.now() - asked).toBeGreaterThanOrEqual(145);
    // Deleted during the wait: -TIMEOUT when the wait runs out. (Nothing shows that the wait has
    // begun; had the delete come first, the answer is -NOT-FOUND, and at once.)
    expect((await c.add(d, q, 60000, LONG_TTL, 'd')).text).toBe(OK);
    const [w] = waiters;
    const askedD = Date.now();
    const deletedWait = w.result(d, 400);
    expect((await c.delete(d)).text).toBe(OK);
    const late = (await deletedWait).text;
    expect([TIMEOUT, NOT_FOUND]).toContain(late);
    if (late === TIMEOUT) expect(Date.now() - askedD).toBeGreaterThanOrEqual(395);
    for (const id of [a, b, n]) expect((await c.delete(id)).text).toBe(OK);
  });
});

describe('workq: races between connections, and a queue process killed with -9', () => {
  const doors = sharedProtocols({ workq: {} });
  const open = workqClients(() => doors.port('workq'));
  const t = doors.t;

  it('16 connections adding one id to 16 queues at once: exactly one +OK, the others Duplicate job', async () => {
    const x = randomUUID();
    const clients = await Promise.all(Array.from({ length: 16 }, () => open()));
    const replies = await Promise.all(clients.map((c, i) => c.add(x, `race-dup-${i}`, 1000, LONG_TTL, `from ${i}`)));
    const texts = replies.map((r) => r.text);
    expect(texts.filter((r) => r === OK)).toHaveLength(1);
    expect(texts.filter((r) => r === clientError('Duplicate job'))).toHaveLength(15);
    const winner = texts.indexOf(OK);
    expect(await jobOf(clients[0]!, x)).toMatchObject({ name: `race-dup-${winner}`, payload: `from ${winner}` });
    expect((await clients[0]!.delete(x)).text).toBe(OK);
  });

  it('8 connections leasing at once from a queue of 50 jobs: every job leased exactly once', async () => {
    const c = await open();
    const q = 'race-lease';
    const all = ids(50);
    c.send(Buffer.concat(all.map((id, i) => withBlock(`add ${id} ${q} 60000 ${LONG_TTL}`, `job ${i}`))));
    for (const id of all) expect((await c.reply('ok')).text, id).toBe(OK);
    const leasers = await Promise.all(Array.from({ length: 8 }, () => open()));
    const got = await Promise.all(
      leasers.map(async (l) => {
        const mine: string[] = [];
        for (;;) {
          const r = await l.lease([q], 300);
          if (r.type === 'timeout') return mine;
          const job = leasedJob(r);
          expect(job.payload.toString()).toBe(`job ${all.indexOf(job.id)}`);
          mine.push(job.id);
        }
      }),
    );
    expect(got.flat().sort()).toEqual(all);
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 0));
    for (const id of all) expect((await c.delete(id)).text).toBe(OK);
  });

  it('after the queue process is killed: a lease keeps its TTR deadline, a scheduled job is ready at its time, a waiting result gets its answer', async () => {
    const c = await open();
    const w = await open();
    const q = 'restart';
    const [held, waited, sched] = ids(3);
    expect((await c.add(held, q, 3_000, LONG_TTL, 'held')).text).toBe(OK);
    expect((await c.add(waited, q, 60_000, LONG_TTL, 'waited')).text).toBe(OK);
    const leasedAt = Date.now();
    expect(leasedJob(await c.lease([q], 0)).id).toBe(held);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(waited);
    const due = Date.now() + 2_000;
    expect((await c.schedule(sched, q, 1_000, LONG_TTL, new Date(due).toISOString(), 'sched')).text).toBe(OK);
    const result = watched(w.result(waited, 20_000));
    await t().killQueueUnderMgr(q);
    // A precondition, not a speed claim: the restart came well before the scheduled time and the lease's end.
    expect(Date.now()).toBeLessThan(due - 200);
    expect((await c.lease([q], 0)).text).toBe(TIMEOUT);
    expect(await jobOf(c, held)).toMatchObject({ state: '4', attempts: '1' });
    expect((await c.inspect('queue', q)).text).toBe(queueReply(q, 0, 1));
    expect(result.settled()).toBe(false);
    expect((await c.complete(waited, 'after')).text).toBe(OK);
    expect((await result.p).text).toBe(resultReply(waited, true, 'after'));
    expect(leasedJob(await c.lease([q], 5_000)).id).toBe(sched);
    expect(Date.now()).toBeGreaterThanOrEqual(due - 2);
    expect(leasedJob(await c.lease([q], 5_000)).id).toBe(held);
    expect(Date.now()).toBeGreaterThanOrEqual(leasedAt + 3_000 - 5);
    expect(await jobOf(c, held)).toMatchObject({ state: '4', attempts: '2' });
    for (const id of [held, waited, sched]) expect((await c.delete(id)).text).toBe(OK);
  });
});

describe('workq: the strict profile (the reference server\'s v4-only ids and 30-day TTL cap)', () => {
  const doors = sharedProtocols({ workq: { strict: true } });
  const open = workqClients(() => doors.port('workq'));

  it('refuses a v1 id and a v4 id of another variant with Invalid ID, on every command that takes an acceptable id', async () => {
    const c = await open();
    const q = 'strict-ids';
    const future = isoSeconds(Date.now() + 3_600_000);
    for (const id of [V1_ID, V4_OTHER_VARIANT]) {
      expect((await c.add(id, q, 1000, LONG_TTL, 'x')).text).toBe(clientError('Invalid ID'));
      expect((await c.schedule(id, q, 1000, LONG_TTL, future, 'x')).text).toBe(clientError('Invalid ID'));
      expect((await c.run(id, q, 1000, 100, 'x')).text).toBe(clientError('Invalid ID'));
      expect((await c.complete(id, 'x')).text).toBe(clientError('Invalid ID'));
      expect((await c.fail(id, 'x')).text).toBe(clientError('Invalid ID'));
      expect((await c.result(id, 100)).text).toBe(clientError('Invalid ID'));
      // inspect job only parses the id.
      expect((await c.inspect('job', id)).text).toBe(NOT_FOUND);
    }
    // The acceptability check comes after the parses and before the name rules.
    expect((await c.add(V1_ID, 'q!', 'x', LONG_TTL, 'x')).text).toBe(clientError('Invalid TTR'));
    expect((await c.add(V1_ID, 'q!', 0, 0, 'x')).text).toBe(clientError('Invalid ID'));
    const x = randomUUID();
    expect((await c.add(x, q, 1000, LONG_TTL, 'v4')).text).toBe(OK);
    expect(leasedJob(await c.lease([q], 0)).id).toBe(x);
    expect((await c.delete(x)).text).toBe(OK);
  });

  it('delete of a parsable v1 id answers +OK (it deletes nothing); of an unknown v4 id -NOT-FOUND', async () => {
    const c = await open();
    expect((await c.delete(V1_ID)).text).toBe(OK);
    expect((await c.delete(randomUUID())).text).toBe(NOT_FOUND);
    expect((await c.delete('not-a-uuid')).text).toBe(clientError('Invalid ID'));
  });

  it('caps the TTL at 30 days', async () => {
    const c = await open();
    const q = 'strict-ttl';
    const [a, b] = ids(2);
    expect((await c.add(a, q, 1000, 2_592_000_001, 'x')).text).toBe(clientError('Invalid TTL'));
    expect((await c.add(a, q, 1000, '18446744073709551615', 'x')).text).toBe(clientError('Invalid TTL'));
    expect((await c.schedule(b, q, 1000, 2_592_000_001, isoSeconds(Date.now() + 60_000), 'x')).text).toBe(clientError('Invalid TTL'));
    expect((await c.add(a, q, 1000, 2_592_000_000, 'x')).text).toBe(OK);
    expect(await jobOf(c, a)).toMatchObject({ ttl: '2592000000' });
    expect((await c.delete(a)).text).toBe(OK);
  });
});

describe('workq: each strict switch alone', () => {
  const t = useTestRoot();

  it('strictUuidV4 refuses the v1 id but takes a TTL over 30 days; a fresh server counts from zero', async () => {
    const before = Date.now();
    const p = await startProtocols(t(), { workq: { strictUuidV4: true } });
    const c = await WorkqClient.connect(p.port('workq'));
    try {
      const keys = await serverKeys(c);
      expect(keys['evicted-jobs']).toBe('0');
      expect(keys['started']! >= isoSeconds(before) && keys['started']! <= isoSeconds(Date.now())).toBe(true);
      expect((await c.add(V1_ID, 'alone-uuid', 1000, LONG_TTL, 'x')).text).toBe(clientError('Invalid ID'));
      const x = randomUUID();
      expect((await c.add(x, 'alone-uuid', 1000, 2_592_000_001, 'x')).text).toBe(OK);
      expect((await c.delete(x)).text).toBe(OK);
    } finally {
      c.destroy();
    }
  });

  it('strictTtlCap refuses a TTL over 30 days but takes the v1 id', async () => {
    const p = await startProtocols(t(), { workq: { strictTtlCap: true } });
    const c = await WorkqClient.connect(p.port('workq'));
    try {
      expect((await c.add(randomUUID(), 'alone-ttl', 1000, 2_592_000_001, 'x')).text).toBe(clientError('Invalid TTL'));
      expect((await c.add(V1_ID, 'alone-ttl', 1000, LONG_TTL, 'x')).text).toBe(OK);
      expect((await c.delete(V1_ID)).text).toBe(OK);
    } finally {
      c.destroy();
    }
  });
});

describe('workq: the config section', () => {
  const t = useTestRoot();

  /** Start the web process on its own with this `protocols.workq` section; resolves with its exit code and output once it exits. */
  async function webWith(root: TestRoot, section: Record<string, unknown>): Promise<{ code: number | null; out: string }> {
    await root.usePort();
    root.setMainConfig({ protocols: { workq: { port: await freePort(), ...section } } });
    const child = spawn(process.execPath, [path.join(REPO, 'dist/src/web/web-main.js')], { cwd: root.root, env: { ...process.env, RQ_ROOT: root.root }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    // A web that accepted the section would run on: stop it, and the test fails on its exit code.
    const stop = setTimeout(() => child.kill('SIGKILL'), 5_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    clearTimeout(stop);
    return { code, out };
  }

  it('takes strict, strictUuidV4 and strictTtlCap (default off; strict turns both on) and refuses a bad key with RQ_CONFIG naming it', () => {
    expect(parseWorkqSection({ port: 1 })).toEqual({ strictUuidV4: false, strictTtlCap: false, queues: [] });
    expect(parseWorkqSection({ port: 1, addr: '0.0.0.0', strict: true })).toEqual({ strictUuidV4: true, strictTtlCap: true, queues: [] });
    expect(parseWorkqSection({ port: 1, strictUuidV4: true })).toEqual({ strictUuidV4: true, strictTtlCap: false, queues: [] });
    expect(parseWorkqSection({ port: 1, strictTtlCap: true, strict: false })).toEqual({ strictUuidV4: false, strictTtlCap: true, queues: [] });
    for (const [section, text] of [
      [{ strict: 'yes' }, '"protocols.workq.strict" must be true or false, got "yes"'],
      [{ strictUuidV4: 1 }, '"protocols.workq.strictUuidV4" must be true or false, got 1'],
      [{ strictTtlCap: 'true' }, '"protocols.workq.strictTtlCap" must be true or false'],
      [{ strictTTLCap: true }, '"protocols.workq.strictTTLCap"'],
      [{ queues: [7] }, '"protocols.workq.queues" must be an array of queue name patterns'],
    ] as Array<[Record<string, unknown>, string]>) {
      expect(() => parseWorkqSection({ port: 1, ...section }), JSON.stringify(section)).toThrow(
        expect.objectContaining({ constructor: RqError, code: 'RQ_CONFIG', message: expect.stringContaining(text) }),
      );
    }
  });

  it('a key of the wrong type keeps the web process from starting, with a message naming it', async () => {
    for (const [section, key] of [
      [{ strict: 'yes' }, 'protocols.workq.strict'],
      [{ strictUuidV4: 1 }, 'protocols.workq.strictUuidV4'],
      [{ strictTtlCap: 'true' }, 'protocols.workq.strictTtlCap'],
      [{ queues: 'nsB.*' }, 'protocols.workq.queues'],
    ] as Array<[Record<string, unknown>, string]>) {
      const { code, out } = await webWith(t(), section);
      expect(code, JSON.stringify(section)).toBe(1);
      expect(out).toContain(key);
    }
  });
});

describe('workq: what connections hold in memory', () => {
  const doors = sharedProtocols({ workq: {} });
  const open = workqClients(() => doors.port('workq'));
  /** What the Workq connections hold, from the web's /metrics. */
  const held = async (): Promise<number> => {
    const text = await (await fetch(`${doors.web().base}/metrics`)).text();
    return Number(/^rq_workq_held_bytes (\d+)$/m.exec(text)?.[1]);
  };
  /** The bytes of one chunk a socket reads at most (Node reads 64 KiB at a time): a connection may read one past its bound. */
  const CHUNK = 64 * 1024;
  const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 100));

  it('stops reading a connection whose unanswered commands hold 2 MiB, reads it again as they are answered, and answers every one in order', async () => {
    const pid = webPid(doors.t());
    const rss = (): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
    const c = await open();
    const other = await open();
    const q = 'mem-pipe';
    const blocker = 'mem-block';
    // A lease that waits holds up the commands behind it: none is answered until it is.
    c.send(`lease ${blocker} 600000\r\n`);
    await waitFor(async () => (await other.inspect('queue', blocker)).type === 'records', 5_000, 'the lease to record its name');
    const before = rss();
    const jobs = Array.from({ length: 64 }, () => randomUUID());
    const payload = randomBytes(MiB);
    c.send(Buffer.concat(jobs.map((id) => withBlock(`add ${id} ${q} 60000 ${LONG_TTL}`, payload))));
    // 64 MiB of commands wait behind the lease, but the server reads only up to the
    // connection's bound. The RSS bound is generous: the web process grew by about 8 MB
    // here, and by about 80 MB before the bound (it read all 64 commands at once).
    for (let i = 0; i < 10; i++) {
      await pause();
      expect(rss() - before).toBeLessThan(32 * MiB);
      expect(await held()).toBeLessThanOrEqual(2 * MiB + CHUNK);
    }
    await waitFor(async () => (await held()) >= 2 * MiB, 10_000, 'the connection to hold 2 MiB');
    const x = randomUUID();
    expect((await other.add(x, blocker, 60000, LONG_TTL, 'go')).text).toBe(OK);
    expect(leasedJob(await c.reply('lease')).id).toBe(x);
    for (const id of jobs) expect((await c.reply('ok')).text, id).toBe(OK);
    await waitFor(async () => (await held()) === 0, 5_000, 'the connection to hold nothing');
    expect((await other.inspect('queue', q)).text).toBe(queueReply(q, 64, 0));
  });

  it('stops reading every connection with commands to answer once all of them hold 64 MiB; gives back what a connection held when it is answered or goes away', async () => {
    const clients = await Promise.all(Array.from({ length: 40 }, () => open()));
    const other = await open();
    const blocker = 'mem-door-block';
    // Three commands of 1 MiB each (a TTR of 0 is refused once the block is read, so the reply comes without a job).
    const adds = Buffer.concat([0, 1, 2].map(() => withBlock(`add ${randomUUID()} mem-door 0 ${LONG_TTL}`, randomBytes(MiB))));
    for (const c of clients) c.send(Buffer.concat([Buffer.from(`lease ${blocker} 600000\r\n`), adds]));
    // Each connection reads its lease, which waits, and then what the bounds let it. Alone,
    // each would read its 2 MiB: 80 MiB and more. Together they stop at 64 MiB, each past
    // it by one chunk at most.
    await waitFor(async () => (await held()) >= 64 * MiB, 10_000, 'the connections to hold 64 MiB');
    for (let i = 0; i < 10; i++) {
      await pause();
      expect(await held()).toBeLessThanOrEqual(64 * MiB + clients.length * CHUNK);
    }
    const jobs = clients.map(() => randomUUID());
    for (const id of jobs) expect((await other.add(id, blocker, 60000, LONG_TTL, 'go')).text).toBe(OK);
    const leased: string[] = [];
    for (const c of clients) {
      leased.push(leasedJob(await c.reply('lease')).id);
      for (let k = 0; k < 3; k++) expect((await c.reply('ok')).text).toBe(clientError('Invalid TTR'));
    }
    expect(leased.sort()).toEqual(jobs.sort());
    await waitFor(async () => (await held()) === 0, 5_000, 'the connections to hold nothing');
    // A command cut off in the middle: what came of it is given back when its client goes away.
    const gone = await open();
    gone.send(adds.subarray(0, MiB / 2));
    await waitFor(async () => (await held()) >= MiB / 2, 5_000, 'the half command to arrive');
    gone.destroy();
    await waitFor(async () => (await held()) === 0, 5_000, 'the connection to hold nothing');
  });
});

describe('workq: a failure inside rq', () => {
  const t = useTestRoot();

  it('answers -SERVER-ERROR internal error; what went wrong (here a path on the server) stays in the log', async () => {
    const p = await startProtocols(t(), { workq: {} });
    // The file that records the names used only by lease cannot be written: a directory stands in its place.
    const names = path.join(t().root, 'config', 'workq.names');
    fs.rmSync(names, { force: true });
    fs.mkdirSync(names);
    const c = await WorkqClient.connect(p.port('workq'));
    try {
      const r = await c.lease(['never-made'], 0);
      expect(r.text).toBe('-SERVER-ERROR internal error\r\n');
    } finally {
      c.destroy();
    }
  });
});
