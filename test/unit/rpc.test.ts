// RQ's RPC framing over Unix sockets (docs/socket.md): `rq1 ` + 8-digit byte length +
// ` ` + payload, one request and one reply per connection.
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rpcCall, rpcRequest } from '../../src/client/rpc.js';
import { createRpcServer } from '../../src/rpc/server.js';
import { MAX_PAYLOAD, decodePacket, encodePacket, splitRequest } from '../../src/rpc/wire.js';
import { useScratchDir } from '../helpers/ops-tools.js';

describe('encodePacket', () => {
  it('frames a payload with its byte length', () => {
    expect(encodePacket('ping ').toString()).toBe('rq1 00000005 ping ');
    expect(encodePacket('["pong"]').toString()).toBe('rq1 00000008 ["pong"]');
    expect(encodePacket('').toString()).toBe('rq1 00000000 ');
  });

  it('counts bytes, not characters', () => {
    const b = encodePacket('é☃');
    expect(b.subarray(0, 13).toString()).toBe('rq1 00000005 ');
    expect(b.length).toBe(18);
  });

  it('frames a payload given in parts as the parts joined', () => {
    expect(encodePacket('create_message', ' ', '{"p":"é☃\ud800"}')).toEqual(encodePacket('create_message {"p":"é☃\ud800"}'));
    expect(() => encodePacket('x'.repeat(MAX_PAYLOAD), 'y')).toThrow(RangeError);
  });

  it('refuses a payload the 8-digit length cannot hold', () => {
    expect(MAX_PAYLOAD).toBe(99_999_999);
    expect(() => encodePacket('x'.repeat(MAX_PAYLOAD + 1))).toThrow(RangeError);
  });
});

describe('decodePacket', () => {
  const packet = encodePacket('get_message {"msg_id":"20261121.0527.42.578.1"}');

  it('decodes a whole packet', () => {
    expect(decodePacket(packet, false)).toEqual({ type: 'packet', payload: 'get_message {"msg_id":"20261121.0527.42.578.1"}' });
  });

  it('waits for more while the header or payload is incomplete', () => {
    for (const n of [0, 3, 4, 12, 13, packet.length - 1]) {
      expect(decodePacket(packet.subarray(0, n), false)).toEqual({ type: 'partial' });
    }
  });

  it('yields what arrived when the payload is cut short at EOF', () => {
    expect(decodePacket(Buffer.from('rq1 00000010 ping '), true)).toEqual({ type: 'packet', payload: 'ping ' });
  });

  it('ignores bytes after the announced length', () => {
    expect(decodePacket(Buffer.from('rq1 00000004 pingEXTRA'), false)).toEqual({ type: 'packet', payload: 'ping' });
  });

  it('decodes a multi-byte payload by byte length', () => {
    expect(decodePacket(encodePacket('["ok","é☃"]'), false)).toEqual({ type: 'packet', payload: '["ok","é☃"]' });
  });

  it.each([
    ['bad magic', 'rq2 00000005 ping '],
    ['HTTP on the socket', 'GET / HTTP/1.1\r\n'],
    ['no space after the length', 'rq1 00000005xping '],
    ['a non-digit length', 'rq1 0000000a ping '],
    ['a short length field', 'rq1 5 ping      '],
  ])('rejects %s', (_what, text) => {
    expect(decodePacket(Buffer.from(text), false).type).toBe('bad');
  });

  it('rejects bad magic as soon as four bytes are in', () => {
    expect(decodePacket(Buffer.from('GET '), false).type).toBe('bad');
  });

  it('rejects a header cut short at EOF', () => {
    expect(decodePacket(Buffer.from('rq1 0000'), true).type).toBe('bad');
    expect(decodePacket(Buffer.alloc(0), true).type).toBe('bad');
  });
});

describe('splitRequest', () => {
  it('splits at the first space only', () => {
    expect(splitRequest('create_message {"dest":"a b","param1":"c d"}')).toEqual({
      command: 'create_message',
      argument: '{"dest":"a b","param1":"c d"}',
    });
  });

  it('gives an empty argument for "ping " and for a bare command', () => {
    expect(splitRequest('ping ')).toEqual({ command: 'ping', argument: '' });
    expect(splitRequest('ping')).toEqual({ command: 'ping', argument: '' });
  });
});

describe('rpcCall against createRpcServer on a Unix socket', () => {
  const scratch = useScratchDir('rq-rpc-');
  let dir = '';
  let sock = '';
  const servers: net.Server[] = [];

  beforeEach(() => {
    dir = scratch();
    sock = path.join(dir, 'queue.sock');
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  });

  async function listen(server: net.Server): Promise<void> {
    servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(sock, () => resolve());
    });
  }

  it('round-trips a command and its argument', async () => {
    const seen: Array<[string, string]> = [];
    await listen(
      createRpcServer(async (command, argument) => {
        seen.push([command, argument]);
        return command === 'ping' ? '["pong"]' : JSON.stringify(['ok', JSON.parse(argument)]);
      }),
    );
    expect(await rpcCall(sock, 'ping')).toEqual(['pong']);
    const arg = { dest: 'test', param1: 'a b', param2: 'é☃'.repeat(5000) };
    expect(await rpcCall(sock, 'create_message', JSON.stringify(arg))).toEqual(['ok', arg]);
    expect(seen[0]).toEqual(['ping', '']);
    expect(seen[1]?.[0]).toBe('create_message');
  });

  it('sends the exact bytes of the protocol', async () => {
    let received = Buffer.alloc(0);
    const server = net.createServer((s) => {
      s.on('data', (c: Buffer) => {
        received = Buffer.concat([received, c]);
        if (received.length >= 18) s.end('rq1 00000008 ["pong"]');
      });
    });
    await listen(server);
    expect(await rpcCall(sock, 'ping')).toEqual(['pong']);
    expect(received.toString()).toBe('rq1 00000005 ping ');
  });

  it('answers a request split across many writes', async () => {
    await listen(createRpcServer(async (command, argument) => JSON.stringify([command, argument])));
    const reply = await new Promise<string>((resolve, reject) => {
      const c = net.createConnection(sock);
      const bytes = encodePacket('status {"a":1}');
      let out = '';
      c.on('connect', () => {
        let i = 0;
        const next = (): void => {
          if (i >= bytes.length) return;
          c.write(bytes.subarray(i, i + 3));
          i += 3;
          setTimeout(next, 1);
        };
        next();
      });
      c.on('data', (d: Buffer) => (out += d.toString()));
      c.on('end', () => resolve(out));
      c.on('error', reject);
    });
    expect(reply).toBe(encodePacket(JSON.stringify(['status', '{"a":1}'])).toString());
    expect(reply.startsWith('rq1 00000022 ')).toBe(true);
  });

  it('drops a connection with a bad header without replying', async () => {
    let handled = 0;
    await listen(
      createRpcServer(async () => {
        handled++;
        return '["pong"]';
      }),
    );
    const got = await new Promise<{ data: string }>((resolve) => {
      const c = net.createConnection(sock);
      let data = '';
      c.on('connect', () => c.write('GET / HTTP/1.1\r\n\r\n'));
      c.on('data', (d: Buffer) => (data += d.toString()));
      c.on('close', () => resolve({ data }));
      c.on('error', () => {});
    });
    expect(got.data).toBe('');
    expect(handled).toBe(0);
  });

  it('resolves null when the server drops the connection without a reply', async () => {
    await listen(net.createServer((s) => s.on('data', () => s.destroy())));
    expect(await rpcCall(sock, 'ping')).toBeNull();
  });

  it('resolves null for a reply with a bad header or unparseable JSON', async () => {
    await listen(net.createServer((s) => s.once('data', () => s.end('rq2 00000008 ["pong"]'))));
    expect(await rpcCall(sock, 'ping')).toBeNull();
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    await listen(createRpcServer(async () => 'not json'));
    expect(await rpcCall(sock, 'ping')).toBeNull();
  });

  it('resolves null when nothing listens', async () => {
    expect(await rpcCall(path.join(dir, 'nobody.sock'), 'ping')).toBeNull();
  });

  it('resolves null when the server never answers, after the timeout', async () => {
    // Reads the request (so it sees the client close) but never replies.
    await listen(net.createServer((s) => s.resume()));
    expect(await rpcCall(sock, 'ping', '', 100)).toBeNull();
  });

  it('replies ["fail","internal error"] when the handler throws', async () => {
    await listen(
      createRpcServer(async () => {
        throw new Error('boom');
      }),
    );
    expect(await rpcCall(sock, 'ping')).toEqual(['fail', 'internal error']);
  });

  it('replies with a clear fail, and keeps serving, when a reply is over the 8-digit length field', async () => {
    const huge = JSON.stringify(['ok', 'x'.repeat(MAX_PAYLOAD)]);
    await listen(createRpcServer(async (command) => (command === 'big' ? huge : '["pong"]')));
    expect(await rpcCall(sock, 'big')).toEqual(['fail', `RPC payload of ${Buffer.byteLength(huge)} bytes is over ${MAX_PAYLOAD}`]);
    expect(await rpcCall(sock, 'ping')).toEqual(['pong']);
  });

  it('refuses a request over the 8-digit length field with RQ_TOO_LARGE, before connecting', async () => {
    await expect(rpcCall(path.join(dir, 'nobody.sock'), 'create_message', 'x'.repeat(MAX_PAYLOAD))).rejects.toMatchObject({
      code: 'RQ_TOO_LARGE',
      message: expect.stringMatching(/^The create_message request is too large for the queue socket: RPC payload of \d+ bytes is over 99999999$/),
    });
  });

  it('tells a request that reached no process (unsent) from one whose reply was lost', async () => {
    expect(await rpcRequest(path.join(dir, 'nobody.sock'), 'ping', '')).toEqual({ type: 'unsent', why: 'ENOENT' });
    await listen(net.createServer((s) => s.on('data', () => s.destroy())));
    expect(await rpcRequest(sock, 'ping', '')).toMatchObject({ type: 'lost', stopped: true });
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    // The peer is still at it when this side stops waiting: not `stopped`.
    await listen(net.createServer((s) => s.resume()));
    expect(await rpcRequest(sock, 'ping', '', { timeoutMs: 100 })).toEqual({ type: 'lost', why: 'no reply within 0.1 s', stopped: false });
  });

  it('takes a reply cut short, or one that is not JSON, for a lost reply (rpcCall: null)', async () => {
    await listen(net.createServer((s) => s.once('data', () => s.end('rq1 00000008 ["po'))));
    expect(await rpcRequest(sock, 'ping', '')).toEqual({ type: 'lost', why: 'the connection closed in the middle of the reply', stopped: true });
    await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    await listen(createRpcServer(async () => 'not json'));
    expect(await rpcRequest(sock, 'ping', '')).toEqual({ type: 'lost', why: 'a reply that is not JSON', stopped: false });
  });

  it('reads an announced id before the reply, in one chunk or split anywhere', async () => {
    const bytes = Buffer.concat([encodePacket('["allocated","20261121.0527.42.578.7"]'), encodePacket('["ok","é☃"]')]);
    for (const cut of [0, 5, 13, 30, 52, bytes.length - 3]) {
      const server = net.createServer((s) =>
        s.once('data', () => {
          s.write(bytes.subarray(0, cut));
          setTimeout(() => s.end(bytes.subarray(cut)), 5);
        }),
      );
      await listen(server);
      expect(await rpcRequest(sock, 'create_message', '{}', { announced: true })).toEqual({ type: 'reply', reply: ['ok', 'é☃'] });
      await new Promise<void>((resolve) => servers.pop()!.close(() => resolve()));
    }
  });

  it('names the announced id when the peer ends before its reply', async () => {
    const held: net.Socket[] = [];
    const server = createRpcServer(async (_command, _argument, conn) => {
      await conn.announce('20261121.0527.42.578.7');
      held[0]!.destroy(); // as the peer's process ending would
      return '["ok"]';
    });
    server.on('connection', (s: net.Socket) => held.push(s));
    await listen(server);
    expect(await rpcRequest(sock, 'publish', '{}', { announced: true })).toEqual({
      type: 'lost',
      why: 'the connection closed without a reply',
      stopped: true,
      allocated: '20261121.0527.42.578.7',
    });
  });

  it('serves many clients at once', async () => {
    await listen(
      createRpcServer(async (_command, argument) => {
        await new Promise((r) => setTimeout(r, Math.random() * 10));
        return JSON.stringify(['ok', argument]);
      }),
    );
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => rpcCall(sock, 'echo', String(i))));
    expect(replies).toEqual(Array.from({ length: 50 }, (_, i) => ['ok', String(i)]));
  });
});
