// The Workq wire codec (docs/doors/workq.md): framing and its error recovery, the
// argument grammar and the order of checks, and the exact bytes of every reply.
import { describe, expect, it } from 'vitest';
import { WorkqDecoder, type Decoded } from '../../src/protocols/workq/decoder.js';
import { NOT_FOUND, OK, TIMEOUT, clientError, inspectReply, leaseReply, resultReply, serverError, workqTime } from '../../src/protocols/workq/replies.js';
import type { WireOptions, WorkqRequest } from '../../src/protocols/workq/requests.js';

const LENIENT: WireOptions = { strictUuidV4: false, strictTtlCap: false };
const STRICT: WireOptions = { strictUuidV4: true, strictTtlCap: true };

/** The example exchange's id (version 4), the version-1 id of Workq's examples, and the nil UUID. */
const ID = '6ba7b810-9dad-41d1-80b4-00c04fd430c4';
const V1 = '6ba7b810-9dad-11d1-80b4-00c04fd430c4';
const NIL = '00000000-0000-0000-0000-000000000000';
const CAP = 1_058_576;
const MIB = 1_048_576;

/** A decoded item, readable: the request, the reply's text, or CLOSE. */
type Shown = WorkqRequest | string;
const show = (items: Decoded[]): Shown[] =>
  items.map((d) => ('request' in d ? d.request : 'reply' in d ? d.reply.toString('latin1') : 'CLOSE'));

const bytes = (input: string | Buffer): Buffer => (typeof input === 'string' ? Buffer.from(input, 'latin1') : input);

/** Everything one chunk decodes to. */
const decode = (input: string | Buffer, options = LENIENT): Shown[] => show(new WorkqDecoder(options).push(bytes(input)));

/** The one request the input decodes to. */
function request(input: string | Buffer, options = LENIENT): WorkqRequest {
  const out = decode(input, options);
  expect(out).toHaveLength(1);
  const [only] = out;
  if (typeof only === 'string') throw new Error(`expected a request, got ${JSON.stringify(only)}`);
  return only!;
}

/** The reply text the input decodes to, alone. */
function replyOf(input: string | Buffer, options = LENIENT): string {
  const out = decode(input, options);
  expect(out).toHaveLength(1);
  expect(typeof out[0]).toBe('string');
  return out[0] as string;
}

const err = (text: string): string => `-CLIENT-ERROR ${text}\r\n`;

/** `add` with the payload `pong` and the given middle of the line. */
const add = (args: string, flags = ''): string => `add ${args} 4${flags}\r\npong\r\n`;
const schedule = (args: string, flags = ''): string => `schedule ${args} 4${flags}\r\npong\r\n`;
const run = (args: string, flags = ''): string => `run ${args} 4${flags}\r\npong\r\n`;

describe('replies', () => {
  it('writes the fixed replies and the error forms byte for byte', () => {
    expect(OK.toString()).toBe('+OK\r\n');
    expect(TIMEOUT.toString()).toBe('-TIMEOUT\r\n');
    expect(NOT_FOUND.toString()).toBe('-NOT-FOUND\r\n');
    expect(clientError('Duplicate job').toString()).toBe('-CLIENT-ERROR Duplicate job\r\n');
    expect(serverError('Queue out of sync').toString()).toBe('-SERVER-ERROR Queue out of sync\r\n');
  });

  it('writes the example exchange’s lease and result replies', () => {
    expect(leaseReply(ID, 'ping', 1000, Buffer.from('pong')).toString()).toBe(`+OK 1\r\n${ID} ping 1000 4\r\npong\r\n`);
    expect(resultReply(ID, true, Buffer.from('ok')).toString()).toBe(`+OK 1\r\n${ID} 1 2\r\nok\r\n`);
  });

  it('writes a failed job with no result as `<id> 0 0` and an empty line', () => {
    expect(resultReply(ID, false, Buffer.alloc(0)).toString()).toBe(`+OK 1\r\n${ID} 0 0\r\n\r\n`);
  });

  it('writes binary payloads and results raw, their size in bytes', () => {
    const payload = Buffer.from([0x00, 0x0d, 0x0a, 0xff, 0x0d, 0x0a, 0x00]);
    const lease = leaseReply(ID, 'q', 5, payload);
    expect(lease).toEqual(Buffer.concat([Buffer.from(`+OK 1\r\n${ID} q 5 7\r\n`), payload, Buffer.from('\r\n')]));
    const result = resultReply(ID, false, payload);
    expect(result).toEqual(Buffer.concat([Buffer.from(`+OK 1\r\n${ID} 0 7\r\n`), payload, Buffer.from('\r\n')]));
  });

  it('writes Workq’s documented job record example exactly', () => {
    const created = Date.UTC(2026, 10, 21, 5, 25, 33, 480);
    const reply = inspectReply([
      {
        label: ID,
        pairs: [
          ['name', 'ping'],
          ['ttr', 1000],
          ['ttl', 60000],
          ['payload-size', 4],
          ['payload', Buffer.from('pong')],
          ['max-attempts', 3],
          ['attempts', 0],
          ['max-fails', 1],
          ['fails', 0],
          ['priority', 10],
          ['state', 0],
          ['created', workqTime(created)],
        ],
      },
    ]);
    expect(reply.toString()).toBe(
      `+OK 1\r\n${ID} 12\r\nname ping\r\nttr 1000\r\nttl 60000\r\n` +
        'payload-size 4\r\npayload pong\r\nmax-attempts 3\r\nattempts 0\r\nmax-fails 1\r\nfails 0\r\n' +
        'priority 10\r\nstate 0\r\ncreated 2026-11-21T05:25:33Z\r\n',
    );
  });

  it('writes `inspect server` with its three keys, several records, and an empty list', () => {
    const server = inspectReply([{ label: 'server', pairs: [['active-clients', 2], ['evicted-jobs', 0], ['started', '2026-11-21T05:25:33Z']] }]);
    expect(server.toString()).toBe('+OK 1\r\nserver 3\r\nactive-clients 2\r\nevicted-jobs 0\r\nstarted 2026-11-21T05:25:33Z\r\n');
    const queues = inspectReply([
      { label: 'a', pairs: [['ready-len', 1], ['scheduled-len', 0]] },
      { label: 'b', pairs: [['ready-len', 0], ['scheduled-len', 2]] },
    ]);
    expect(queues.toString()).toBe('+OK 2\r\na 2\r\nready-len 1\r\nscheduled-len 0\r\nb 2\r\nready-len 0\r\nscheduled-len 2\r\n');
    expect(inspectReply([]).toString()).toBe('+OK 0\r\n');
  });

  it('writes a raw payload value with CR LF inside as it is', () => {
    const reply = inspectReply([{ label: ID, pairs: [['payload', Buffer.from('a\r\nb')]] }]);
    expect(reply.toString('latin1')).toBe(`+OK 1\r\n${ID} 1\r\npayload a\r\nb\r\n`);
  });

  it.each([
    [Date.UTC(2026, 10, 21, 5, 25, 33, 999), '2026-11-21T05:25:33Z'],
    [Date.UTC(2026, 10, 21, 5, 25, 33) + 0.5, '2026-11-21T05:25:33Z'],
    [0, '1970-01-01T00:00:00Z'],
    [-1, '1969-12-31T23:59:59Z'],
    [Date.UTC(2028, 1, 29, 23, 59, 59), '2028-02-29T23:59:59Z'],
  ])('workqTime(%d) is %s (UTC, whole seconds)', (ms, text) => {
    expect(workqTime(ms)).toBe(text);
  });
});

describe('the example exchange: the requests', () => {
  it('decodes each client line of the example exchange', () => {
    expect(request(`add ${ID} ping 1000 60000 4 -priority=10 -max-attempts=3 -max-fails=1\r\npong\r\n`)).toEqual({
      cmd: 'add',
      id: ID,
      name: 'ping',
      ttrMs: 1000,
      ttl: 60000n,
      payload: Buffer.from('pong'),
      priority: 10,
      maxAttempts: 3,
      maxFails: 1,
    });
    expect(request(`add ${ID} ping 1000 60000 4\r\npong\r\n`)).toEqual({
      cmd: 'add',
      id: ID,
      name: 'ping',
      ttrMs: 1000,
      ttl: 60000n,
      payload: Buffer.from('pong'),
      priority: 0,
      maxAttempts: 0,
      maxFails: 0,
    });
    expect(request('lease ping 1000\r\n')).toEqual({ cmd: 'lease', names: ['ping'], waitMs: 1000 });
    expect(request(`complete ${ID} 2\r\nok\r\n`)).toEqual({ cmd: 'complete', id: ID, result: Buffer.from('ok') });
    expect(request(`result ${ID} 0\r\n`)).toEqual({ cmd: 'result', id: ID, waitMs: 0 });
    expect(request('lease nothing-here 100\r\n')).toEqual({ cmd: 'lease', names: ['nothing-here'], waitMs: 100 });
  });

  it('answers the last pair with two errors: the block is not consumed after a failed flag check', () => {
    expect(decode('add 88888882-2222-4222-8222-222222222222 q10 10 100 1 -priority=\r\na\r\n')).toEqual([
      err('Invalid command flags'),
      err('Unknown command'),
    ]);
  });
});

describe('framing', () => {
  describe('command line', () => {
    it.each([
      ['an empty line', '\r\n'],
      ['an upper-case command', `DELETE ${ID}\r\n`],
      ['a mixed-case command', 'Lease q 0\r\n'],
      ['a line that starts with a space', ' lease q 0\r\n'],
      ['a line of spaces', '   \r\n'],
      ['an unknown name', 'put q 0\r\n'],
      ['a name with a trailing CR', 'lease\r q 0\r\n'],
    ])('%s → Unknown command', (_, input) => {
      expect(decode(input)).toEqual([err('Unknown command')]);
    });

    it('drops empty tokens, so runs of spaces and trailing spaces work', () => {
      expect(request('lease   a  b 10   \r\n')).toEqual({ cmd: 'lease', names: ['a', 'b'], waitMs: 10 });
      expect(request(`complete  ${ID}   2 \r\nok\r\n`)).toEqual({ cmd: 'complete', id: ID, result: Buffer.from('ok') });
    });

    it('closes on a bare LF, with nothing decoded after it', () => {
      expect(decode('lease q 0\n')).toEqual(['CLOSE']);
      expect(decode('\n')).toEqual(['CLOSE']);
      const decoder = new WorkqDecoder(LENIENT);
      expect(show(decoder.push(bytes('lease a 0\r\nlease b 0\nlease c 0\r\n')))).toEqual([
        { cmd: 'lease', names: ['a'], waitMs: 0 },
        'CLOSE',
      ]);
      expect(decoder.push(bytes('lease d 0\r\n'))).toEqual([]);
    });

    it('closes on a command line that is HTTP (a request line or a Host header), with nothing decoded after it', () => {
      const http = (input: string): Decoded[] => new WorkqDecoder(LENIENT).push(bytes(input));
      for (const line of ['POST / HTTP/1.1', 'GET /x?y=1 HTTP/1.0', 'PRI * HTTP/2.0', 'OPTIONS * HTTP/1.1', 'Host: 127.0.0.1:9922', 'host:x', 'HOST:']) {
        expect(http(`${line}\r\n${add(ID + ' q 1000 60000')}`), line).toEqual([{ close: true, http: true }]);
      }
      expect(show(http(`lease a 0\r\nPOST / HTTP/1.1\r\nlease b 0\r\n`))).toEqual([{ cmd: 'lease', names: ['a'], waitMs: 0 }, 'CLOSE']);
      // Look-alikes that are not HTTP stay Workq errors; a data block is never taken for a command line.
      expect(decode('POST / HTTP/1\r\n')).toEqual([err('Unknown command')]);
      expect(decode('GET  HTTP/1.1\r\n')).toEqual([err('Unknown command')]);
      expect(decode('Hostname: x\r\n')).toEqual([err('Unknown command')]);
      expect(request(`add ${ID} q 1000 60000 14\r\nGET / HTTP/1.1\r\n`)).toMatchObject({ cmd: 'add', payload: Buffer.from('GET / HTTP/1.1') });
    });

    it('reports held bytes while a command is incomplete, and 0 between commands', () => {
      const decoder = new WorkqDecoder(LENIENT);
      expect(decoder.pending).toBe(0);
      expect(decoder.push(bytes('lease q'))).toEqual([]);
      expect(decoder.pending).toBe(7);
      expect(show(decoder.push(bytes(' 0\r\n')))).toEqual([{ cmd: 'lease', names: ['q'], waitMs: 0 }]);
      expect(decoder.pending).toBe(0);
      const line = `complete ${ID} 2\r\n`;
      expect(decoder.push(bytes(line))).toEqual([]);
      expect(decoder.pending).toBe(line.length); // the line is read, its block is not: still mid-command
      expect(decoder.push(bytes('ok\r'))).toEqual([]);
      expect(decoder.pending).toBe(line.length + 3);
      expect(show(decoder.push(bytes('\n')))).toEqual([{ cmd: 'complete', id: ID, result: Buffer.from('ok') }]);
      expect(decoder.pending).toBe(0);
    });
  });

  describe('flags', () => {
    it('takes flags anywhere after the command, even between positional arguments', () => {
      expect(request(`add -priority=5 ${ID} -max-attempts=2 ping 1000 -max-fails=1 60000 4\r\npong\r\n`)).toMatchObject({
        cmd: 'add',
        id: ID,
        name: 'ping',
        ttrMs: 1000,
        ttl: 60000n,
        priority: 5,
        maxAttempts: 2,
        maxFails: 1,
      });
      // The size is the last *positional* argument, wherever the flags are.
      expect(request(`add ${ID} q 1000 60000 -priority=7 2 -max-fails=3\r\nab\r\n`)).toMatchObject({
        payload: Buffer.from('ab'),
        priority: 7,
        maxFails: 3,
      });
    });

    it('reads a `-` token without `=` as positional', () => {
      expect(request('lease -8 0\r\n')).toEqual({ cmd: 'lease', names: ['-8'], waitMs: 0 });
      // and so `-4` is a (negative) size here, not a flag
      expect(decode(`complete ${ID} -4\r\n`)).toEqual([err('Invalid payload size')]);
    });

    it('takes the whole remainder after the first `=` as the value', () => {
      expect(replyOf(add(`${ID} q 1000 60000`, ' -priority=1=2'))).toBe(err('Invalid Priority'));
      expect(request(add(`${ID} q 1000 60000`, ' -tag=a=b'))).toMatchObject({ cmd: 'add', priority: 0 });
    });

    it.each([
      ['an empty key', ' -=1'],
      ['an empty value', ' -priority='],
      ['an empty key and value', ' -='],
      ['a duplicate key', ' -priority=1 -priority=1'],
      ['a duplicate unknown key', ' -x=1 -x=2'],
    ])('%s → Invalid command flags, block left unread', (_, flags) => {
      expect(decode(add(`${ID} q 1000 60000`, flags))).toEqual([err('Invalid command flags'), err('Unknown command')]);
    });

    it('ignores unknown flags within the limit, and counts them toward it', () => {
      expect(request(add(`${ID} q 1000 60000`, ' -a=1 -b=2 -c=3'))).toMatchObject({ cmd: 'add', priority: 0, maxAttempts: 0, maxFails: 0 });
      expect(request(run(`${ID} q 1000 10`, ' -max-attempts=3'))).toMatchObject({ cmd: 'run', priority: 0 });
    });
  });

  describe('data block and error recovery', () => {
    it('keeps any bytes in a block: CR, LF, CR LF and NUL', () => {
      const payload = Buffer.from([0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x0d, 0x0d, 0x0a, 0x0a, 0xff, 0x00]);
      const input = Buffer.concat([bytes(`add ${ID} q 1000 60000 ${payload.length}\r\n`), payload, bytes('\r\n')]);
      expect(request(input)).toMatchObject({ cmd: 'add', payload });
      const failInput = Buffer.concat([bytes(`fail ${ID} ${payload.length}\r\n`), payload, bytes('\r\n')]);
      expect(request(failInput)).toEqual({ cmd: 'fail', id: ID, result: payload });
    });

    it('accepts an empty block', () => {
      expect(request(`complete ${ID} 0\r\n\r\n`)).toEqual({ cmd: 'complete', id: ID, result: Buffer.alloc(0) });
    });

    it('accepts a block of exactly 1 MiB and refuses 1 MiB + 1, leaving that block to be read as a line', () => {
      const mib = Buffer.alloc(MIB, 'a');
      const ok = Buffer.concat([bytes(`add ${ID} q 1000 60000 ${MIB}\r\n`), mib, bytes('\r\n')]);
      const got = request(ok);
      // Buffer.equals: a deep equality over 1 MiB would take seconds
      expect(got.cmd === 'add' && got.payload.equals(mib)).toBe(true);
      const over = Buffer.concat([bytes(`add ${ID} q 1000 60000 ${MIB + 1}\r\n`), Buffer.alloc(MIB + 1, 'a'), bytes('\r\n')]);
      expect(decode(over)).toEqual([err('Invalid payload size'), err('Unknown command')]);
    });

    it.each([
      ['add: wrong positional count', `add ${ID} q 1000 4\r\npong\r\n`, 'Invalid command args'],
      ['add: size not a number', `add ${ID} q 1000 60000 four\r\npong\r\n`, 'Invalid payload size'],
      ['add: negative size', `add ${ID} q 1000 60000 -4\r\npong\r\n`, 'Invalid payload size'],
      ['schedule: wrong positional count', `schedule ${ID} q 1000 60000 4\r\npong\r\n`, 'Invalid command args'],
      ['run: size a fraction', `run ${ID} q 1000 10 4.0\r\npong\r\n`, 'Invalid payload size'],
      ['complete: size missing', `complete ${ID}\r\npong\r\n`, 'Invalid command args'],
      ['complete: bad size', `complete ${ID} 0x4\r\npong\r\n`, 'Invalid payload size'],
      ['fail: bad size', `fail ${ID} 4x\r\npong\r\n`, 'Invalid result size'],
      ['fail: too many positionals', `fail ${ID} x 4\r\npong\r\n`, 'Invalid command args'],
    ])('%s → the error, then the unread block read as a line', (_, input, text) => {
      expect(decode(input)).toEqual([err(text), err('Unknown command')]);
    });

    it('reads an unread block as whatever command it spells', () => {
      expect(decode(`complete ${ID}\r\nlease q 0\r\n`)).toEqual([err('Invalid command args'), { cmd: 'lease', names: ['q'], waitMs: 0 }]);
    });

    it('closes when an unread block holds a bare LF', () => {
      expect(decode(`complete ${ID} x\r\na\nb\r\n`)).toEqual([err('Invalid payload size'), 'CLOSE']);
    });

    it.each([
      ['add', `add ${ID} q 1000 60000 2\r\n`, 'Invalid payload size'],
      ['schedule', `schedule ${ID} q 1000 60000 2999-01-01T00:00:00Z 2\r\n`, 'Invalid payload size'],
      ['run', `run ${ID} q 1000 10 2\r\n`, 'Invalid payload size'],
      ['complete', `complete ${ID} 2\r\n`, 'Invalid payload size'],
      ['fail', `fail ${ID} 2\r\n`, 'Invalid result size'],
    ])('%s: a block not followed by CR LF → the size error, and parsing resumes right after those 2 bytes', (_, line, text) => {
      expect(decode(`${line}okXYlease q 0\r\n`)).toEqual([err(text), { cmd: 'lease', names: ['q'], waitMs: 0 }]);
      expect(decode(`${line}ok\r\rlease q 0\r\n`)).toEqual([err(text), { cmd: 'lease', names: ['q'], waitMs: 0 }]);
      // A block one byte short of its size: the block takes `o\r`, the trailer `\nl`, and
      // parsing goes on at `ease q 0`.
      expect(decode(`${line}o\r\nlease q 0\r\n`)).toEqual([err(text), err('Unknown command')]);
    });

    it('checks the trailer before the arguments', () => {
      expect(decode(`add nonsense q x x 2\r\nokXY`)).toEqual([err('Invalid payload size')]);
    });

    it('consumes the block when a check after it fails', () => {
      expect(decode(`add nonsense q 1000 60000 4\r\npong\r\nlease q 0\r\n`)).toEqual([
        err('Invalid ID'),
        { cmd: 'lease', names: ['q'], waitMs: 0 },
      ]);
      expect(decode(add(`${ID} q 1000 60000`, ' -a=1 -b=2 -c=3 -d=4') + 'lease q 0\r\n')).toEqual([
        err('Invalid command args'),
        { cmd: 'lease', names: ['q'], waitMs: 0 },
      ]);
      expect(decode(`complete ${ID} 2 -x=1\r\nok\r\nlease q 0\r\n`)).toEqual([
        err('Invalid command args'),
        { cmd: 'lease', names: ['q'], waitMs: 0 },
      ]);
    });

    it.each([
      ['+4', 4],
      ['0004', 4],
      ['-0', 0],
    ])('reads the size %j as %d (a signed decimal, as Go reads it)', (size, n) => {
      const input = `complete ${ID} ${size}\r\n${'x'.repeat(n)}\r\n`;
      expect(request(input)).toEqual({ cmd: 'complete', id: ID, result: Buffer.from('x'.repeat(n)) });
    });
  });

  describe('size cap', () => {
    it('accepts a line of exactly 1,058,576 bytes and closes at one more, without buffering further', () => {
      const line = (total: number): string => `lease q${' '.repeat(total - 11)} 0\r\n`;
      expect(line(CAP)).toHaveLength(CAP);
      expect(request(line(CAP))).toEqual({ cmd: 'lease', names: ['q'], waitMs: 0 });
      expect(decode(line(CAP + 1))).toEqual(['CLOSE']);
    });

    it('closes as soon as 1,058,576 bytes arrive with no LF, however they are split', () => {
      const decoder = new WorkqDecoder(LENIENT);
      const piece = bytes('x'.repeat(65_536));
      let out: Decoded[] = [];
      for (let sent = 0; sent + piece.length < CAP; sent += piece.length) out = out.concat(decoder.push(piece));
      expect(out).toEqual([]);
      expect(decoder.pending).toBeLessThan(CAP);
      expect(show(decoder.push(bytes('x'.repeat(CAP - decoder.pending))))).toEqual(['CLOSE']);
      expect(decoder.push(bytes('\r\n'))).toEqual([]);
    });

    it('counts the line and its block together: 10,000 bytes of line plus 1 MiB', () => {
      const withLine = (lineBytes: number): Buffer => {
        const head = `add ${ID} q 1000 60000`;
        const tail = ` ${MIB}\r\n`;
        return Buffer.concat([bytes(head + ' '.repeat(lineBytes - head.length - tail.length) + tail), Buffer.alloc(MIB, 7), bytes('\r\n')]);
      };
      const got = request(withLine(10_000));
      expect(got.cmd === 'add' && got.payload.equals(Buffer.alloc(MIB, 7))).toBe(true);
      expect(decode(withLine(10_001))).toEqual(['CLOSE']);
    });
  });

  describe('incremental input', () => {
    // A pipelined stream with every framing case: flags, binary blocks, a bad trailer,
    // blocks left unread, empty lines, a leading space, and every command.
    const stream = Buffer.concat([
      bytes(`add ${ID} ping 1000 60000 4 -priority=10 -max-attempts=3 -max-fails=1\r\npong\r\n`),
      bytes(`add {${V1.toUpperCase()}} q   1000 60000 6\r\n`),
      Buffer.from([0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x00]),
      bytes('\r\n'),
      bytes(`complete ${ID} 2\r\nokXY`),
      bytes('lease q r 0\r\n'),
      bytes('add 88888882-2222-4222-8222-222222222222 q10 10 100 1 -priority=\r\na\r\n'),
      bytes(`fail ${ID} 3\r\nbad\r\n`),
      bytes(`schedule ${ID} q 1000 60000 2999-01-01T00:00:00.25Z 0\r\n\r\n`),
      bytes(`run urn:uuid:${ID} q 500 100 1 -priority=-3\r\n\n\r\n`),
      bytes(`result ${ID} 100\r\n`),
      bytes('\r\n'),
      bytes(` delete ${ID}\r\n`),
      bytes(`delete ${ID}\r\n`),
      bytes(`inspect job ${ID}\r\n`),
      bytes('inspect jobs q 0 10\r\n'),
      bytes('inspect server\r\n'),
    ]);
    const expected: Shown[] = [
      { cmd: 'add', id: ID, name: 'ping', ttrMs: 1000, ttl: 60000n, payload: Buffer.from('pong'), priority: 10, maxAttempts: 3, maxFails: 1 },
      { cmd: 'add', id: V1, name: 'q', ttrMs: 1000, ttl: 60000n, payload: Buffer.from([0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x00]), priority: 0, maxAttempts: 0, maxFails: 0 },
      err('Invalid payload size'),
      { cmd: 'lease', names: ['q', 'r'], waitMs: 0 },
      err('Invalid command flags'),
      err('Unknown command'),
      { cmd: 'fail', id: ID, result: Buffer.from('bad') },
      { cmd: 'schedule', id: ID, name: 'q', ttrMs: 1000, ttl: 60000n, timeMs: Date.UTC(2999, 0, 1) + 250, payload: Buffer.alloc(0), priority: 0, maxAttempts: 0, maxFails: 0 },
      { cmd: 'run', id: ID, name: 'q', ttrMs: 500, waitMs: 100, payload: Buffer.from('\n'), priority: -3 },
      { cmd: 'result', id: ID, waitMs: 100 },
      err('Unknown command'),
      err('Unknown command'),
      { cmd: 'delete', id: ID, ignore: false },
      { cmd: 'inspect', what: 'job', id: ID },
      { cmd: 'inspect', what: 'jobs', name: 'q', offset: 0, limit: 10 },
      { cmd: 'inspect', what: 'server' },
    ];

    it('decodes the stream fed as one chunk', () => {
      const decoder = new WorkqDecoder(LENIENT);
      expect(show(decoder.push(stream))).toEqual(expected);
      expect(decoder.pending).toBe(0);
    });

    it('decodes the same fed one byte at a time', () => {
      const decoder = new WorkqDecoder(LENIENT);
      const out: Decoded[] = [];
      for (let i = 0; i < stream.length; i++) out.push(...decoder.push(stream.subarray(i, i + 1)));
      expect(show(out)).toEqual(expected);
      expect(decoder.pending).toBe(0);
    });

    it('decodes the same split in two at every byte position', () => {
      for (let at = 0; at <= stream.length; at++) {
        const decoder = new WorkqDecoder(LENIENT);
        const out = [...decoder.push(stream.subarray(0, at)), ...decoder.push(stream.subarray(at))];
        expect(show(out), `split at ${at}`).toEqual(expected);
      }
    });
  });
});

describe('the error texts: each text and a trigger', () => {
  it.each([
    ['Unknown command', 'inspect nothing\r\n'],
    ['Invalid command args', `delete ${ID} ${ID}\r\n`],
    ['Invalid command flags', `result ${ID} 0 -a=1 -a=1\r\n`],
    ['Invalid payload size', `run ${ID} q 1000 10 2\r\nokay\r\n`],
    ['Invalid result size', `fail ${ID} 2\r\nokay\r\n`],
    ['Invalid ID', `result 6ba7b810 0\r\n`],
    ['Invalid Name', 'lease a/b 0\r\n'],
    ['Invalid TTR', add(`${ID} q 0 60000`)],
    ['Invalid TTL', add(`${ID} q 1000 0`)],
    ['Invalid Time', schedule(`${ID} q 1000 60000 2030-01-01T00:00:00+00:00`)],
    ['Invalid Max Attempts', add(`${ID} q 1000 60000`, ' -max-attempts=256')],
    ['Invalid Max Fails', add(`${ID} q 1000 60000`, ' -max-fails=256')],
    ['Invalid Priority', add(`${ID} q 1000 60000`, ' -priority=2147483648')],
    ['Invalid wait timeout', 'lease q 86400001\r\n'],
    ['Invalid cursor offset', 'inspect queues 4294967296 10\r\n'],
    ['Invalid limit', 'inspect queues 0 101\r\n'],
  ])('-CLIENT-ERROR %s', (text, input) => {
    expect(decode(input)[0]).toBe(err(text));
  });
});

describe('argument grammar', () => {
  describe('ids', () => {
    it.each([
      ['upper case', ID.toUpperCase()],
      ['braces', `{${ID}}`],
      ['urn:uuid:', `urn:uuid:${ID}`],
      ['URN:UUID: in capitals', `URN:UUID:${ID.toUpperCase()}`],
      ['32 hex digits', ID.replaceAll('-', '')],
    ])('accepts %s and answers with the lower-case canonical form', (_, form) => {
      expect(request(`delete ${form}\r\n`)).toEqual({ cmd: 'delete', id: ID, ignore: false });
      expect(request(add(`${form} q 1000 60000`))).toMatchObject({ cmd: 'add', id: ID });
    });

    it.each([
      ['one digit short', ID.slice(0, -1)],
      ['one digit long', `${ID}0`],
      ['a dash moved', '6ba7b8109-dad-41d1-80b4-00c04fd430c4'],
      ['a non-hex digit', ID.replace('6', 'g')],
      ['an open brace only', `{${ID}`],
      ['parentheses', `(${ID})`],
      ['urn with braces', `urn:uuid:{${ID}}`],
      ['another urn prefix', `urn:uid:${ID}`],
      ['33 hex digits', `${ID.replaceAll('-', '')}a`],
      ['32 hex digits with braces', `{${ID.replaceAll('-', '')}}`],
    ])('refuses %s with Invalid ID', (_, form) => {
      expect(decode(`delete ${form}\r\n`)).toEqual([err('Invalid ID')]);
      expect(decode(add(`${form} q 1000 60000`))).toEqual([err('Invalid ID')]);
    });

    it.each([[NIL], [`{${NIL}}`], [`urn:uuid:${NIL}`], [NIL.replaceAll('-', '')]])('refuses the nil UUID %s everywhere, in both profiles', (nil) => {
      for (const options of [LENIENT, STRICT]) {
        expect(decode(add(`${nil} q 1000 60000`), options)).toEqual([err('Invalid ID')]);
        expect(decode(schedule(`${nil} q 1000 60000 2999-01-01T00:00:00Z`), options)).toEqual([err('Invalid ID')]);
        expect(decode(run(`${nil} q 1000 10`), options)).toEqual([err('Invalid ID')]);
        expect(decode(`complete ${nil} 0\r\n\r\n`, options)).toEqual([err('Invalid ID')]);
        expect(decode(`fail ${nil} 0\r\n\r\n`, options)).toEqual([err('Invalid ID')]);
        expect(decode(`result ${nil} 0\r\n`, options)).toEqual([err('Invalid ID')]);
        expect(decode(`delete ${nil}\r\n`, options)).toEqual([err('Invalid ID')]);
        expect(decode(`inspect job ${nil}\r\n`, options)).toEqual([err('Invalid ID')]);
      }
    });

    it('accepts any version by default and only v4 with the RFC 4122 variant under strictUuidV4', () => {
      const wrongVariant = '6ba7b810-9dad-41d1-c0b4-00c04fd430c4';
      for (const id of [V1, wrongVariant]) {
        expect(request(add(`${id} q 1000 60000`))).toMatchObject({ cmd: 'add', id });
        expect(request(`result ${id} 0\r\n`)).toEqual({ cmd: 'result', id, waitMs: 0 });
        expect(decode(add(`${id} q 1000 60000`), STRICT)).toEqual([err('Invalid ID')]);
        expect(decode(schedule(`${id} q 1000 60000 2999-01-01T00:00:00Z`), STRICT)).toEqual([err('Invalid ID')]);
        expect(decode(run(`${id} q 1000 10`), STRICT)).toEqual([err('Invalid ID')]);
        expect(decode(`complete ${id} 0\r\n\r\n`, STRICT)).toEqual([err('Invalid ID')]);
        expect(decode(`fail ${id} 0\r\n\r\n`, STRICT)).toEqual([err('Invalid ID')]);
        expect(decode(`result ${id} 0\r\n`, STRICT)).toEqual([err('Invalid ID')]);
      }
      expect(request(add(`${ID} q 1000 60000`), STRICT)).toMatchObject({ cmd: 'add', id: ID });
    });

    it('delete: a parsable non-v4 id is to be ignored under strictUuidV4, an ordinary id otherwise', () => {
      expect(request(`delete ${V1}\r\n`, STRICT)).toEqual({ cmd: 'delete', id: V1, ignore: true });
      expect(request(`delete ${V1}\r\n`)).toEqual({ cmd: 'delete', id: V1, ignore: false });
      expect(request(`delete ${ID}\r\n`, STRICT)).toEqual({ cmd: 'delete', id: ID, ignore: false });
    });

    it('inspect job: no version check in either profile', () => {
      expect(request(`inspect job ${V1}\r\n`, STRICT)).toEqual({ cmd: 'inspect', what: 'job', id: V1 });
    });
  });

  describe('names', () => {
    it.each([['a'.repeat(255)], ['a.b-c_D9'], ['q.deleted'], ['-'], ['q.deleted.x']])('accepts %j', (name) => {
      expect(request(`lease ${name} 0\r\n`)).toEqual({ cmd: 'lease', names: [name], waitMs: 0 });
      expect(request(add(`${ID} ${name} 1000 60000`))).toMatchObject({ name });
    });

    it.each([
      ['256 bytes', 'a'.repeat(256)],
      ['a `/`', 'a/b'],
      ['a `$` (which other front doors allow)', 'a$b'],
      ['a `:`', 'a:b'],
      ['a non-ASCII byte', 'caf\xe9'],
      ['a leading dot (rq cannot hold it)', '.q'],
      ['only a dot', '.'],
      ['a deleted-queue suffix (rq cannot hold it)', 'q.deleted.12'],
    ])('refuses %s with Invalid Name', (_, name) => {
      expect(decode(`lease ${name} 0\r\n`)).toEqual([err('Invalid Name')]);
      expect(decode(add(`${ID} ${name} 1000 60000`))).toEqual([err('Invalid Name')]);
      expect(decode(run(`${ID} ${name} 1000 10`))).toEqual([err('Invalid Name')]);
      expect(decode(`inspect queue ${name}\r\n`)).toEqual([err('Invalid Name')]);
      expect(decode(`inspect jobs ${name} 0 1\r\n`)).toEqual([err('Invalid Name')]);
    });
  });

  describe('integers', () => {
    const ttr = (text: string): Shown => decode(add(`${ID} q ${text} 60000`))[0]!;
    const ttl = (text: string, options = LENIENT): Shown => decode(add(`${ID} q 1000 ${text}`), options)[0]!;
    const flag = (f: string): Shown => decode(add(`${ID} q 1000 60000`, ` ${f}`))[0]!;

    it('ttr: uint32 in 1..86,400,000, no sign, leading zeros fine', () => {
      expect(ttr('1')).toMatchObject({ ttrMs: 1 });
      expect(ttr('86400000')).toMatchObject({ ttrMs: 86_400_000 });
      expect(ttr('007')).toMatchObject({ ttrMs: 7 });
      for (const bad of ['0', '86400001', '4294967296', '+5', '-1', '1.0', '1e3', '9'.repeat(400)]) expect(ttr(bad), bad).toBe(err('Invalid TTR'));
    });

    it('ttl: any uint64 >= 1 by default, kept exact; 30 days at most under strictTtlCap', () => {
      expect(ttl('1')).toMatchObject({ ttl: 1n });
      expect(ttl('18446744073709551615')).toMatchObject({ ttl: 18_446_744_073_709_551_615n });
      expect(ttl('0000000000000000000000000012')).toMatchObject({ ttl: 12n });
      for (const bad of ['0', '18446744073709551616', '+1', '-1', '1'.repeat(100_000)]) expect(ttl(bad), bad.slice(0, 30)).toBe(err('Invalid TTL'));
      expect(ttl('2592000000', STRICT)).toMatchObject({ ttl: 2_592_000_000n });
      expect(ttl('2592000001', STRICT)).toBe(err('Invalid TTL'));
      expect(ttl('2592000001')).toMatchObject({ ttl: 2_592_000_001n });
    });

    it('priority: signed int32, a leading + or - allowed', () => {
      expect(flag('-priority=-2147483648')).toMatchObject({ priority: -2_147_483_648 });
      expect(flag('-priority=2147483647')).toMatchObject({ priority: 2_147_483_647 });
      expect(flag('-priority=+5')).toMatchObject({ priority: 5 });
      expect(flag('-priority=010')).toMatchObject({ priority: 10 });
      const zero = flag('-priority=-0');
      expect(typeof zero === 'object' && Object.is(zero.cmd === 'add' ? zero.priority : NaN, 0)).toBe(true);
      for (const bad of ['2147483648', '-2147483649', '1.5', '0x10', '--1', 'high']) expect(flag(`-priority=${bad}`), bad).toBe(err('Invalid Priority'));
    });

    it('max-attempts and max-fails: 0..255, no sign', () => {
      expect(flag('-max-attempts=255')).toMatchObject({ maxAttempts: 255 });
      expect(flag('-max-fails=255')).toMatchObject({ maxFails: 255 });
      expect(flag('-max-attempts=0')).toMatchObject({ maxAttempts: 0 });
      for (const bad of ['256', '-1', '+1', 'x']) {
        expect(flag(`-max-attempts=${bad}`), bad).toBe(err('Invalid Max Attempts'));
        expect(flag(`-max-fails=${bad}`), bad).toBe(err('Invalid Max Fails'));
      }
    });

    it('wait-timeout: 0..86,400,000 on lease, run and result', () => {
      expect(request('lease q 86400000\r\n')).toEqual({ cmd: 'lease', names: ['q'], waitMs: 86_400_000 });
      expect(request(run(`${ID} q 1000 86400000`))).toMatchObject({ waitMs: 86_400_000 });
      expect(request(`result ${ID} 86400000\r\n`)).toEqual({ cmd: 'result', id: ID, waitMs: 86_400_000 });
      for (const bad of ['86400001', '-1', '+1', 'soon']) {
        expect(decode(`lease q ${bad}\r\n`), bad).toEqual([err('Invalid wait timeout')]);
        expect(decode(run(`${ID} q 1000 ${bad}`)), bad).toEqual([err('Invalid wait timeout')]);
        expect(decode(`result ${ID} ${bad}\r\n`), bad).toEqual([err('Invalid wait timeout')]);
      }
    });

    it('lease with wait 0 is an ordinary request (the server polls)', () => {
      expect(request('lease q 0\r\n')).toEqual({ cmd: 'lease', names: ['q'], waitMs: 0 });
    });
  });

  describe('time', () => {
    const timeOf = (text: string, ttl = '60000'): Shown => decode(schedule(`${ID} q 1000 ${ttl} ${text}`))[0]!;

    it.each([
      ['2999-01-02T03:04:05Z', Date.UTC(2999, 0, 2, 3, 4, 5)],
      ['2999-01-02T03:04:05.5Z', Date.UTC(2999, 0, 2, 3, 4, 5) + 500],
      ['2999-01-02T03:04:05.5005Z', Date.UTC(2999, 0, 2, 3, 4, 5) + 500.5],
      ['2999-01-02T03:04:05.000001Z', Date.UTC(2999, 0, 2, 3, 4, 5) + 0.001],
      ['2999-01-02T03:04:05.123456789999Z', Date.UTC(2999, 0, 2, 3, 4, 5) + 123.456789],
      ['2028-02-29T23:59:59Z', Date.UTC(2028, 1, 29, 23, 59, 59)],
    ])('reads %s, keeping the fraction', (text, ms) => {
      expect(timeOf(text)).toMatchObject({ cmd: 'schedule', timeMs: ms });
    });

    it.each([
      ['an offset', '2999-01-01T00:00:00+00:00'],
      ['a lower-case z', '2999-01-01T00:00:00z'],
      ['no zone', '2999-01-01T00:00:00'],
      ['a lower-case t', '2999-01-01t00:00:00Z'],
      ['month 13', '2999-13-01T00:00:00Z'],
      ['month 0', '2999-00-01T00:00:00Z'],
      ['February 30', '2999-02-30T00:00:00Z'],
      ['February 29 of a common year', '2027-02-29T00:00:00Z'],
      ['day 0', '2999-01-00T00:00:00Z'],
      ['hour 24', '2999-01-01T24:00:00Z'],
      ['minute 60', '2999-01-01T00:60:00Z'],
      ['second 60', '2999-01-01T00:00:60Z'],
      ['a one-digit field', '2999-1-01T00:00:00Z'],
      ['a dot with no digits', '2999-01-01T00:00:00.Z'],
      ['a comma fraction', '2999-01-01T00:00:00,5Z'],
      ['epoch seconds', '32503680000'],
    ])('refuses %s with Invalid Time', (_, text) => {
      expect(timeOf(text)).toBe(err('Invalid Time'));
    });

    it('refuses a time whose expiry (time + ttl) is past, accepts a past time whose expiry is ahead', () => {
      expect(timeOf('2001-01-01T00:00:00Z', '1000')).toBe(err('Invalid Time'));
      expect(timeOf('2001-01-01T00:00:00Z', '10000000000000')).toMatchObject({ cmd: 'schedule', timeMs: Date.UTC(2001, 0, 1) });
      // an expiry past year 9999 is "never", which is ahead
      expect(timeOf('0001-01-01T00:00:00Z', '18446744073709551615')).toMatchObject({ timeMs: -62_135_596_800_000 });
      expect(decode(schedule(`${ID} q 1000 2592000000 2001-01-01T00:00:00Z`), STRICT)).toEqual([err('Invalid Time')]);
    });
  });
});

describe('order of checks', () => {
  it.each([
    ['id parse first', add('nonsense a/b x x', ' -max-attempts=x -priority=x'), LENIENT, 'Invalid ID'],
    ['ttr parse before name charset', add(`${ID} a/b x 60000`), LENIENT, 'Invalid TTR'],
    ['ttr parse before id version', add(`${V1} q x 60000`), STRICT, 'Invalid TTR'],
    ['ttl parse before flags', add(`${ID} q 1000 x`, ' -max-attempts=x'), LENIENT, 'Invalid TTL'],
    ['flags before ttl range', add(`${ID} q 1000 0`, ' -max-attempts=x'), LENIENT, 'Invalid Max Attempts'],
    ['max-attempts before max-fails and priority, whatever the flag order', add(`${ID} q 1000 60000`, ' -priority=x -max-fails=x -max-attempts=x'), LENIENT, 'Invalid Max Attempts'],
    ['max-fails before priority', add(`${ID} q 1000 60000`, ' -priority=x -max-fails=x'), LENIENT, 'Invalid Max Fails'],
    ['priority before id acceptability', add(`${NIL} a/b 0 0`, ' -priority=x'), LENIENT, 'Invalid Priority'],
    ['id acceptability before name', add(`${NIL} a/b 0 0`), LENIENT, 'Invalid ID'],
    ['name before ttr range', add(`${ID} a/b 0 0`), LENIENT, 'Invalid Name'],
    ['ttr range before ttl range', add(`${ID} q 0 0`), LENIENT, 'Invalid TTR'],
    ['flag count before everything after the block', add('nonsense q x x', ' -a=1 -b=2 -c=3 -d=4'), LENIENT, 'Invalid command args'],
  ])('add: %s', (_, input, options, text) => {
    expect(decode(input, options)).toEqual([err(text)]);
  });

  it.each([
    ['flag count first', schedule('nonsense q x x x', ' -a=1 -b=2 -c=3 -d=4'), LENIENT, 'Invalid command args'],
    ['ttl parse before time', schedule(`${ID} q 1000 x never`), LENIENT, 'Invalid TTL'],
    ['time parse before flags', schedule(`${ID} q 1000 60000 never`, ' -max-attempts=x'), LENIENT, 'Invalid Time'],
    ['time parse before ttr range', schedule(`${ID} q 0 60000 never`), LENIENT, 'Invalid Time'],
    ['time parse before id version', schedule(`${V1} q 1000 60000 never`), STRICT, 'Invalid Time'],
    ['flags before the expiry check', schedule(`${ID} q 1000 60000 2001-01-01T00:00:00Z`, ' -priority=x'), LENIENT, 'Invalid Priority'],
    ['ttl range before the expiry check', schedule(`${ID} q 1000 0 2001-01-01T00:00:00Z`), LENIENT, 'Invalid TTL'],
    ['ttl cap before the expiry check', schedule(`${ID} q 1000 2592000001 2001-01-01T00:00:00Z`), STRICT, 'Invalid TTL'],
  ])('schedule: %s', (_, input, options, text) => {
    expect(decode(input, options)).toEqual([err(text)]);
  });

  it.each([
    ['more than 1 flag', run(`${ID} q 1000 10`, ' -priority=1 -x=2'), LENIENT, 'Invalid command args'],
    ['ttr parse before priority', run(`${ID} q x x`, ' -priority=x'), LENIENT, 'Invalid TTR'],
    ['priority before wait-timeout', run(`${ID} q 1000 x`, ' -priority=x'), LENIENT, 'Invalid Priority'],
    ['wait-timeout before id acceptability', run(`${V1} a/b 0 x`), STRICT, 'Invalid wait timeout'],
    ['id acceptability before name', run(`${V1} a/b 0 10`), STRICT, 'Invalid ID'],
    ['name before ttr range', run(`${V1} a/b 0 10`), LENIENT, 'Invalid Name'],
    ['ttr range last', run(`${ID} q 0 10`), LENIENT, 'Invalid TTR'],
  ])('run: %s', (_, input, options, text) => {
    expect(decode(input, options)).toEqual([err(text)]);
  });

  it('run: decodes its request', () => {
    expect(request(run(`${ID} q 1000 86400000`, ' -priority=-5'))).toEqual({
      cmd: 'run',
      id: ID,
      name: 'q',
      ttrMs: 1000,
      waitMs: 86_400_000,
      payload: Buffer.from('pong'),
      priority: -5,
    });
  });

  it('lease: counts and flags, then the timeout, then each name', () => {
    expect(decode('lease\r\n')).toEqual([err('Invalid command args')]);
    expect(decode('lease q\r\n')).toEqual([err('Invalid command args')]);
    expect(decode('lease q 0 -x=1\r\n')).toEqual([err('Invalid command args')]);
    expect(decode('lease a/b x\r\n')).toEqual([err('Invalid wait timeout')]);
    expect(decode('lease a/b 10\r\n')).toEqual([err('Invalid Name')]);
    expect(decode('lease q a/b 10\r\n')).toEqual([err('Invalid Name')]);
    expect(request('lease b a c 10\r\n')).toEqual({ cmd: 'lease', names: ['b', 'a', 'c'], waitMs: 10 });
  });

  it('result: counts and flags, then the id, then the timeout', () => {
    expect(decode(`result ${ID}\r\n`)).toEqual([err('Invalid command args')]);
    expect(decode(`result ${ID} 0 -x=1\r\n`)).toEqual([err('Invalid command args')]);
    expect(decode('result nonsense x\r\n')).toEqual([err('Invalid ID')]);
    expect(decode(`result ${V1} x\r\n`, STRICT)).toEqual([err('Invalid ID')]);
    expect(decode(`result ${ID} x\r\n`)).toEqual([err('Invalid wait timeout')]);
  });

  it('complete and fail: flags refused, then the id', () => {
    expect(decode(`complete nonsense 0 -x=1\r\n\r\n`)).toEqual([err('Invalid command args')]);
    expect(decode(`fail ${ID} 0 -x=1\r\n\r\n`)).toEqual([err('Invalid command args')]);
    expect(decode(`complete nonsense 0\r\n\r\n`)).toEqual([err('Invalid ID')]);
  });

  it('delete: exactly one positional and no flags, then the id', () => {
    expect(decode('delete\r\n')).toEqual([err('Invalid command args')]);
    expect(decode(`delete ${ID} -x=1\r\n`)).toEqual([err('Invalid command args')]);
    expect(decode('delete nonsense\r\n')).toEqual([err('Invalid ID')]);
  });

  it('a bad flag is reported before a bad positional count, an unknown command before both', () => {
    expect(decode('delete -=1\r\n')).toEqual([err('Invalid command flags')]);
    expect(decode('remove -=1\r\n')).toEqual([err('Unknown command')]);
  });

  describe('inspect', () => {
    it.each([
      ['no object', 'inspect\r\n', 'Invalid command args'],
      ['only a flag', 'inspect -x=1\r\n', 'Invalid command args'],
      ['an unknown object', 'inspect things\r\n', 'Unknown command'],
      ['an object in capitals', 'inspect SERVER\r\n', 'Unknown command'],
      ['an unknown object with a flag', 'inspect things -x=1\r\n', 'Unknown command'],
      ['server with an argument', 'inspect server now\r\n', 'Invalid command args'],
      ['server with a flag', 'inspect server -x=1\r\n', 'Invalid command args'],
      ['queues with one argument', 'inspect queues 0\r\n', 'Invalid command args'],
      ['queues, bad offset', 'inspect queues x 0\r\n', 'Invalid cursor offset'],
      ['queues, offset past uint32', 'inspect queues 4294967296 1\r\n', 'Invalid cursor offset'],
      ['queues, limit 0', 'inspect queues 0 0\r\n', 'Invalid limit'],
      ['queues, limit 101', 'inspect queues 0 101\r\n', 'Invalid limit'],
      ['queue with no name', 'inspect queue\r\n', 'Invalid command args'],
      ['queue with a bad name', 'inspect queue a/b\r\n', 'Invalid Name'],
      ['jobs, name before offset', 'inspect jobs a/b x x\r\n', 'Invalid Name'],
      ['jobs, offset before limit', 'inspect jobs q x x\r\n', 'Invalid cursor offset'],
      ['jobs, limit', 'inspect jobs q 0 x\r\n', 'Invalid limit'],
      ['scheduled-jobs, limit 101', 'inspect scheduled-jobs q 0 101\r\n', 'Invalid limit'],
      ['scheduled-jobs with a flag', 'inspect scheduled-jobs q 0 1 -x=1\r\n', 'Invalid command args'],
      ['job with a bad id', 'inspect job nonsense\r\n', 'Invalid ID'],
      ['job with two ids', `inspect job ${ID} ${ID}\r\n`, 'Invalid command args'],
    ])('%s → %s', (_, input, text) => {
      expect(decode(input)).toEqual([err(text)]);
    });

    it('decodes each object', () => {
      expect(request('inspect server\r\n')).toEqual({ cmd: 'inspect', what: 'server' });
      expect(request('inspect queues 4294967295 1\r\n')).toEqual({ cmd: 'inspect', what: 'queues', offset: 4_294_967_295, limit: 1 });
      expect(request('inspect queues 0 100\r\n')).toEqual({ cmd: 'inspect', what: 'queues', offset: 0, limit: 100 });
      expect(request('inspect queue q\r\n')).toEqual({ cmd: 'inspect', what: 'queue', name: 'q' });
      expect(request('inspect jobs q 3 7\r\n')).toEqual({ cmd: 'inspect', what: 'jobs', name: 'q', offset: 3, limit: 7 });
      expect(request('inspect scheduled-jobs q 0 1\r\n')).toEqual({ cmd: 'inspect', what: 'scheduled-jobs', name: 'q', offset: 0, limit: 1 });
      expect(request(`inspect job {${ID.toUpperCase()}}\r\n`)).toEqual({ cmd: 'inspect', what: 'job', id: ID });
    });
  });
});
