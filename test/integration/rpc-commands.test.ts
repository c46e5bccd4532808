/**
 * A real queue process over its socket: every command (docs/socket.md) with RQ's exact
 * replies, and malformed input that must get a clear fail and never crash the process.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { encodePacket } from '../../src/rpc/wire.js';
import { SHORT_ID_RE } from '../../src/domain/ids.js';
import { HOLD_COMMIT_ENV, TestRoot, halfClosedCall, recorded, shortId, waitFor, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

describe('queue process RPC', () => {
  it('answers ping, uptime, status, config and counts', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh', num_workers: 2, coalesce_params: ['1'], schedule: [{ cron: '0 0 1 1 *', param1: 'x' }] });
    await t.start('q1');
    expect(await t.rpc('q1', 'ping', '')).toEqual(['pong']);
    const [up] = (await t.rpc('q1', 'uptime', '')) as [number];
    expect(Number.isInteger(up)).toBe(true);
    expect(await t.rpc('q1', 'status', '')).toEqual(['UP']);
    expect(await t.rpc('q1', 'config', '')).toEqual([
      'ok',
      {
        name: 'q1',
        script: './scripts/done.sh',
        num_workers: 2,
        exec_prefix: '',
        env_vars: {},
        coalesce_params: [1],
        blocking_params: [],
        schedule: [{ cron: '0 0 1 1 *', cron_obj: '<opaque>', params: { param1: 'x', param2: null, param3: null, param4: null } }],
      },
    ]);
    expect(await t.rpc('q1', 'num_messages', {})).toEqual({ prep: 0, que: 0, run: 0, done: 0, relayed: 0, err: 0 });
  });

  it('creates a message whose id, JSON and read view follow RQ', async () => {
    t.addQueue({ name: 'q1', num_workers: 0 });
    await t.start('q1');
    const reply = (await t.rpc('q1', 'create_message', { dest: 'q1', src: 'test', param1: 'a', param2: null, _method: 'x', max_count: '3' })) as [string, string];
    expect(reply[0]).toBe('ok');
    expect(reply[1]).toMatch(/^http:\/\/127\.0\.0\.1:3333\/q\/q1\/\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/);
    const id = shortId(reply[1]);
    expect(id).toMatch(SHORT_ID_RE);
    const raw = fs.readFileSync(path.join(t.queueDir('q1'), 'que', id, 'msg'), 'utf8');
    const keys = Object.keys(JSON.parse(raw) as object);
    expect(keys).toEqual(['msg_id', 'dest', 'orig_msg_id', 'count', 'max_count', 'src', 'param1', 'param2', 'due']);
    const view = await t.message('q1', id);
    expect(view).toMatchObject({ msg_id: id, dest: 'q1', orig_msg_id: reply[1], count: 0, max_count: 3, param2: null, state: 'que', status: 'que', path: `queue/q1/que/${id}` });
    expect(await t.rpc('q1', 'get_message_state', { msg_id: id })).toEqual(['ok', 'que']);
    expect(await t.rpc('q1', 'get_message_status', { msg_id: id })).toEqual(['ok', { path: `queue/q1/que/${id}`, status: 'que', state: 'que' }]);
    expect(await t.rpc('q1', 'messages', { state: 'que' })).toEqual([{ msg_id: id, due: view['due'], dest: 'q1' }]);
  });

  it('refuses bad input with a clear fail and keeps serving', async () => {
    t.addQueue({ name: 'q1', num_workers: 0 });
    await t.start('q1');
    expect(await t.rpc('q1', 'create_message', { src: 'no dest' })).toEqual(['fail', 'input missing required "dest" parameter', 'RQ_BAD_MESSAGE']);
    const bad = await t.rpcRaw('q1', 'create_message', '{not json');
    expect(bad).toEqual(['fail', expect.stringContaining('argument is not valid JSON'), 'RQ_BAD_REQUEST']);
    expect(await t.rpcRaw('q1', 'create_message', '[1,2]')).toEqual(['fail', 'argument must be a JSON object, got [1,2]', 'RQ_BAD_REQUEST']);
    expect(await t.rpc('q1', 'get_message', {})).toEqual(['fail', "lacking 'msg_id' field", 'RQ_BAD_REQUEST']);
    expect(await t.rpc('q1', 'get_message', { msg_id: '../../../etc' })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    // A pid file reachable by traversal is never read, let alone signalled.
    fs.mkdirSync(path.join(t.root, 'victim'));
    fs.writeFileSync(path.join(t.root, 'victim', 'pid'), String(process.pid));
    expect(await t.rpc('q1', 'destroy_message', { msg_id: '../../../victim' })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    expect(await t.rpc('q1', 'get_message', { msg_id: '20261121.0527.42.578.1' })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    expect(await t.rpc('q1', 'commit_message', { msg_id: '20261121.0527.42.578.100110011' })).toEqual(['fail', 'cannot find message', 'RQ_NOT_IN_STATE']);
    expect(await t.rpc('q1', 'messages', { state: 'nope' })).toEqual(['fail', "invalid or missing 'state' field (nope)", 'RQ_BAD_REQUEST']);
    expect(await t.rpc('q1', 'no_such_command', {})).toEqual(['ERROR']);
    // A bad header drops the connection without a reply; the process keeps going.
    const dropped = await new Promise<string>((resolve) => {
      const s = net.createConnection(path.join(t.queueDir('q1'), 'queue.sock'));
      let got = '';
      s.on('connect', () => s.write('xyz1 00000005 ping '));
      s.on('data', (c: Buffer) => (got += c.toString()));
      s.on('close', () => resolve(got));
    });
    expect(dropped).toBe('');
    // A packet split across writes is still one request.
    const split = await new Promise<string>((resolve) => {
      const s = net.createConnection(path.join(t.queueDir('q1'), 'queue.sock'));
      let got = '';
      const pkt = encodePacket('ping ');
      s.on('connect', () => {
        s.write(pkt.subarray(0, 6));
        setTimeout(() => s.write(pkt.subarray(6)), 30);
      });
      s.on('data', (c: Buffer) => (got += c.toString()));
      s.on('close', () => resolve(got));
    });
    expect(split).toBe('rq1 00000008 ["pong"]');
    expect(await t.rpc('q1', 'ping', '')).toEqual(['pong']);
  });

  it('preps, attaches, lists and commits; attachment names are checked', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await t.start('q1');
    const [, full] = (await t.rpc('q1', 'prep_message', { dest: 'q1', param1: 'p' })) as [string, string];
    const id = shortId(full);
    expect(await t.rpc('q1', 'messages', { state: 'prep' })).toEqual([{ msg_id: id }]);
    const file = path.join(t.root, 'payload.bin');
    fs.writeFileSync(file, 'hello attachment');
    const att = (await t.rpc('q1', 'attach_message', { msg_id: id, pathname: file })) as [string, string];
    expect(att[0]).toBe('ok');
    expect(att[1]).toMatch(/^[0-9a-f]{32}-Attached successfully$/);
    expect(await t.rpc('q1', 'attach_message', { msg_id: id, pathname: 'relative.txt' })).toEqual([
      'fail',
      'Invalid pathname, must be normalized relative.txt (ie. must start with /',
      'RQ_ATTACH',
    ]);
    expect(await t.rpc('q1', 'attach_message', { msg_id: id, pathname: '/nonexistent/x' })).toEqual(['fail', 'No such file /nonexistent/x to attach to message', 'RQ_ATTACH']);
    expect(await t.rpc('q1', 'attach_message', { msg_id: id, pathname: t.root })).toEqual(['fail', `Attachment currently cannot be a directory ${t.root}`, 'RQ_ATTACH']);
    expect(await t.rpc('q1', 'attach_message', { msg_id: id, pathname: file, name: '.hidden' })).toEqual(['fail', 'Attachment name as a dot-file not allowed: .hidden', 'RQ_ATTACH']);
    expect(await t.rpc('q1', 'attach_message', { msg_id: id, pathname: file, name: 'a*b' })).toEqual(['fail', 'Attachment name has invalid character. not allowed: a*b', 'RQ_ATTACH']);
    expect(await t.rpc('q1', 'attach_message', { msg_id: id, pathname: file, name: '../escape' })).toEqual(['fail', 'Attachment name as a dot-file not allowed: ../escape', 'RQ_ATTACH']);
    expect(await t.rpc('q1', 'attach_message', { msg_id: id, pathname: file, name: 'a/b' })).toEqual(['fail', 'Attachment name has invalid character. not allowed: a/b', 'RQ_ATTACH']);
    await t.rpc('q1', 'attach_message', { msg_id: id, pathname: file, name: 'second.txt' });
    expect(await t.rpc('q1', 'delete_attach_message', { msg_id: id, attachment_name: 'second.txt' })).toEqual(['ok', 'Attachment deleted successfully']);
    expect(await t.rpc('q1', 'delete_attach_message', { msg_id: id, attachment_name: 'second.txt' })).toEqual([false, 'No attachment with that named for msg']);
    expect(await t.rpc('q1', 'commit_message', { msg_id: id })).toEqual(['ok', 'msg commited']);
    expect(await t.rpc('q1', 'commit_message', { msg_id: id })).toEqual(['fail', 'cannot find message', 'RQ_NOT_IN_STATE']);
    await t.waitState('q1', id, 'done');
    const view = await t.message('q1', id);
    const attachments = view['_attachments'] as Record<string, { md5: string; size: number; path: string }>;
    expect(Object.keys(attachments)).toEqual(['payload.bin']);
    expect(attachments['payload.bin']!.size).toBe(16);
    expect(attachments['payload.bin']!.md5).toBe(att[1].slice(0, 32));
    expect(attachments['payload.bin']!.path).toBe(path.join(t.root, view['path'] as string, 'attach/payload.bin'));
    expect(fs.readFileSync(attachments['payload.bin']!.path, 'utf8')).toBe('hello attachment');
    expect(await t.rpc('q1', 'delete_attach_message', { msg_id: id, attachment_name: 'payload.bin' })).toEqual(['fail', 'msg not in prep', 'RQ_NOT_IN_STATE']);
  });

  it('announces a new message\'s id before its reply when asked ("_announce": true), and only then', async () => {
    t.addQueue({ name: 'q1', num_workers: 0 });
    t.addQueue({ name: 'p1' });
    fs.writeFileSync(path.join(t.queueDir('p1'), 'config.json'), JSON.stringify({ name: 'p1', script: '', num_workers: 0 })); // a pull queue
    await Promise.all([t.start('q1'), t.start('p1')]);
    /** Every byte the queue sends for one request. */
    const exchange = (queue: string, command: string, arg: unknown): Promise<string> =>
      new Promise((resolve) => {
        const s = net.createConnection(path.join(t.queueDir(queue), 'queue.sock'));
        let got = '';
        s.on('connect', () => s.write(encodePacket(command, ' ', JSON.stringify(arg))));
        s.on('data', (c: Buffer) => (got += c.toString()));
        s.on('close', () => resolve(got));
      });
    const packets = (bytes: string): unknown[] => [...bytes.matchAll(/rq1 \d{8} (\[[^\]]*\])/g)].map((m) => JSON.parse(m[1]!) as unknown);
    const fullId = expect.stringMatching(/^http:\/\/127\.0\.0\.1:3333\/q\/q1\/\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+$/);
    // single_que first, on an empty queue: it makes a message.
    for (const command of ['single_que', 'create_message', 'prep_message']) {
      const [announced, reply, ...rest] = packets(await exchange('q1', command, { dest: 'q1', _announce: true }));
      expect({ command, reply, rest }).toEqual({ command, reply: ['ok', fullId], rest: [] });
      expect(announced).toEqual(['allocated', (reply as string[])[1]]);
    }
    // single_que with a message waiting makes none, and announces none.
    expect(packets(await exchange('q1', 'single_que', { dest: 'q1', _announce: true }))).toEqual([['ok', fullId]]);
    expect(packets(await exchange('q1', 'create_message', { dest: 'q1' }))).toEqual([['ok', fullId]]);
    const [announced, reply] = packets(await exchange('p1', 'publish', { payload: 'eA==', _announce: true }));
    expect(reply).toEqual(['ok', { id: expect.stringMatching(SHORT_ID_RE), ext_id: null }]);
    expect(announced).toEqual(['allocated', (reply as [string, { id: string }])[1].id]);
  });

  it('answers a client that half-closes after its request (as `printf … | socat -` does), then closes', async () => {
    t.addQueue({ name: 'q1', num_workers: 0 });
    t.addQueue({ name: 'p1' });
    fs.writeFileSync(path.join(t.queueDir('p1'), 'config.json'), JSON.stringify({ name: 'p1', script: '', num_workers: 0 })); // a pull queue
    await Promise.all([t.start('q1'), t.start('p1')]);
    const sent = (queue: string, command: string, arg: unknown): Promise<unknown> => halfClosedCall(path.join(t.queueDir(queue), 'queue.sock'), command, arg === '' ? '' : JSON.stringify(arg));
    expect(await sent('q1', 'ping', '')).toEqual(['pong']);
    // Commands that do work (a commit) before they answer.
    const [ok, full] = (await sent('q1', 'create_message', { dest: 'q1', param1: 'half' })) as [string, string];
    expect(ok).toBe('ok');
    expect(await t.message('q1', shortId(full))).toMatchObject({ param1: 'half', state: 'que' });
    const published = (await sent('p1', 'publish', { payload: 'aGVsbG8=', tries: 3 })) as [string, { id: string }];
    expect(published).toEqual(['ok', { id: expect.stringMatching(SHORT_ID_RE), ext_id: null }]);
    // A blocking lease: a client that half-closes may be gone, so the wait ends, but the (empty) reply is still sent.
    expect(await sent('p1', 'lease', { owner: 'w', count: 1, wait_ms: 60_000 })).toEqual(['ok', [expect.objectContaining({ id: published[1].id })]]);
    expect(await sent('p1', 'lease', { owner: 'w', count: 1, wait_ms: 60_000 })).toEqual(['ok', []]);
  });

  it('single_que returns the waiting message instead of creating another', async () => {
    t.addQueue({ name: 'q1', num_workers: 0 });
    await t.start('q1');
    const [, first] = (await t.rpc('q1', 'single_que', { dest: 'q1', param1: 'a' })) as [string, string];
    const [, again] = (await t.rpc('q1', 'single_que', { dest: 'q1', param1: 'other' })) as [string, string];
    expect(again).toBe(first);
    expect(((await t.rpc('q1', 'num_messages', {})) as { que: number }).que).toBe(1);
  });

  it('deletes, clones and runs now as RQ does', async () => {
    t.addQueue({ name: 'q1', script: 'err.sh' });
    await t.start('q1');
    const id = await t.send('q1', { param1: 'x' });
    expect(await t.waitState('q1', id, 'err')).toBe('err - by design');
    const [ok, cloneFull] = (await t.rpc('q1', 'clone_message', { msg_id: id })) as [string, string];
    expect(ok).toBe('ok');
    const cloneId = shortId(cloneFull);
    await t.waitState('q1', cloneId, 'err');
    expect(await t.message('q1', cloneId)).toMatchObject({ cloned_from: id, count: 0, param1: 'x', orig_msg_id: expect.stringMatching(new RegExp(`/q/q1/${id.replaceAll('.', '\\.')}$`)) });
    expect(await t.rpc('q1', 'delete_message', { msg_id: id })).toEqual(['ok', 'msg deleted']);
    expect(await t.rpc('q1', 'get_message', { msg_id: id })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    expect(await t.rpc('q1', 'delete_message', { msg_id: id })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    // run_message and clone_message give the refusal's stable code too (RQ's readers ignore it).
    expect(await t.rpc('q1', 'run_message', { msg_id: cloneId })).toEqual(['fail', 'msg not in runnable state', 'RQ_NOT_IN_STATE']);
    expect(await t.rpc('q1', 'clone_message', { msg_id: 'nope' })).toEqual(['fail', 'msg not found', 'RQ_NOT_FOUND']);
    expect(await t.rpc('q1', 'num_messages', {})).toMatchObject({ err: 1 });
  });

  it('a command on a message whose move is under way waits for the move (one lock per message)', async () => {
    // While `hold-commit` exists, the queue process's journal syncs wait (HOLD_COMMIT_ENV).
    // A move's record is written, then synced, then the directory renamed, and memory
    // follows it only then: a command sent meanwhile would find the message half-moved.
    const hold = path.join(t.root, 'hold-commit');
    t.addQueue({ name: 'q1', script: 'wait-go.sh' });
    await t.start('q1', HOLD_COMMIT_ENV);
    /** Send `commands` (name, or name and more arguments) while a move is held on disk; answered only once the move is let go. */
    const whileHeld = async (id: string, ...commands: Array<string | [string, Record<string, unknown>]>): Promise<unknown[]> => {
      let answered = 0;
      const replies = commands.map((c) => {
        const [name, more] = typeof c === 'string' ? [c, {}] : c;
        return t.rpc('q1', name, { msg_id: id, ...more }).finally(() => answered++);
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(answered).toBe(0);
      fs.rmSync(hold);
      return Promise.all(replies);
    };
    // A commit (prep → que) on a paused queue: deleted from que, rather than "msg not
    // found" because it is no longer in prep. A second commit and an attach find it
    // committed, rather than committing it twice or attaching into a vanished directory.
    fs.writeFileSync(path.join(t.root, 'config/q1.pause'), '');
    expect(await t.rpc('q1', 'status', '')).toEqual(['PAUSE']);
    const prepped = shortId(((await t.rpc('q1', 'prep_message', { dest: 'q1' })) as [string, string])[1]);
    fs.writeFileSync(hold, '');
    const committing = t.rpc('q1', 'commit_message', { msg_id: prepped });
    await waitFor(() => recorded(t, 'q1', prepped, 'que'), 5_000, 'the commit\'s record');
    const file = path.join(t.root, 'file.txt');
    fs.writeFileSync(file, 'x');
    expect(await whileHeld(prepped, 'commit_message', ['attach_message', { pathname: file }], 'delete_message')).toEqual([
      ['fail', 'cannot find message', 'RQ_NOT_IN_STATE'],
      ['fail', 'cannot find message', 'RQ_NOT_IN_STATE'],
      ['ok', 'msg deleted'],
    ]);
    expect(await committing).toEqual(['ok', 'msg commited']);
    expect(await t.rpc('q1', 'num_messages', {})).toMatchObject({ prep: 0, que: 0 });
    expect(fs.readdirSync(path.join(t.queueDir('q1'), 'que'))).toEqual([]);
    // A finished run (run → done): state done and its view, rather than run or "msg not found".
    fs.rmSync(path.join(t.root, 'config/q1.pause'));
    expect(await t.rpc('q1', 'status', '')).toEqual(['UP']);
    const id = await t.send('q1', {});
    await t.waitState('q1', id, 'run');
    fs.writeFileSync(hold, '');
    fs.writeFileSync(path.join(t.queueDir('q1'), 'run', id, 'job', 'go'), '');
    await waitFor(() => recorded(t, 'q1', id, 'done'), 10_000, 'the finished run\'s record');
    const [status, view] = await whileHeld(id, 'get_message_status', 'get_message');
    expect(status).toMatchObject(['ok', { state: 'done', status: 'done - went' }]);
    expect(view).toMatchObject(['ok', { msg_id: id, state: 'done', status: 'done - went' }]);
  });

  it('run_message moves a future message to the front and runs it', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await t.start('q1');
    const later = await t.send('q1', { due: Math.floor(Date.now() / 1000) + 3600 });
    expect(await t.state('q1', later)).toBe('que');
    expect(await t.rpc('q1', 'run_message', { msg_id: later })).toEqual(['ok', 'msg sent to front of run queue']);
    await t.waitState('q1', later, 'done');
  });

  it('single_que returns a waiting message that is not due yet instead of making a second', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await t.start('q1');
    const later = await t.send('q1', { due: Math.floor(Date.now() / 1000) + 3600 });
    const reply = (await t.rpc('q1', 'single_que', { dest: 'q1' })) as [string, string];
    expect(reply[0]).toBe('ok');
    expect(reply[1].endsWith(`/${later}`)).toBe(true);
    expect(await t.rpc('q1', 'num_messages', {})).toMatchObject({ que: 1 });
  });

  it('while DOWN refuses message commands but answers the operational ones; PAUSE queues without running', async () => {
    t.addQueue({ name: 'q1', script: 'done.sh' });
    await t.start('q1');
    fs.writeFileSync(path.join(t.root, 'config/q1.pause'), '');
    const id = await t.send('q1', {});
    expect(await t.rpc('q1', 'status', '')).toEqual(['PAUSE']);
    expect(await t.state('q1', id)).toBe('que');
    fs.writeFileSync(path.join(t.root, 'config/q1.down'), '');
    expect(await t.rpc('q1', 'status', '')).toEqual(['DOWN']);
    expect(await t.rpc('q1', 'create_message', { dest: 'q1' })).toEqual(['fail', 'status: DOWN', 'RQ_QUEUE_DOWN']);
    expect(await t.rpc('q1', 'get_message', { msg_id: id })).toEqual(['fail', 'status: DOWN', 'RQ_QUEUE_DOWN']);
    expect(await t.rpc('q1', 'num_messages', {})).toMatchObject({ que: 1 });
    fs.rmSync(path.join(t.root, 'config/q1.down'));
    fs.rmSync(path.join(t.root, 'config/q1.pause'));
    // No RPC needed: the flag files are watched and re-read at least every few seconds.
    await waitFor(async () => (await t.state('q1', id)) === 'done', 6000, 'the paused message to run after resume');
  });
});

