/**
 * The relay between rq hosts (docs/relay.md; a script's dup, `bin/rq sendmesg`) with two real
 * installs on 127.0.0.1, each under its own rq-mgr with its own root and web port: the
 * local one runs the `relay` queue with libexec/relay_script (backoff base 1 s through
 * `RELAY_BACKOFF_SECS`, so retries come after 0, 1, 4… s), the remote one the queue
 * `test` (done.sh), reached only through its HTTP API.
 *
 * Covered: delivery from `sendmesg --relay-ok` and from a worker's `dup` to a URL, large
 * attachments, `force_remote`, ids answered on another origin, loop detection,
 * RQ_COUNT > 15, a bad backoff setting, a remote that is down at first, and the fault
 * tests: kill -9 of the remote web process or of the remote queue process after prep, in
 * the middle of an attachment upload, and after the commit but before its reply reaches
 * the relay (a fault proxy in front of the remote strikes at the chosen point; rq-mgr
 * restarts the killed process). Every relayed message must arrive exactly once,
 * attachments intact, the local message must end `relayed - <remote full id>`, and
 * neither side may keep anything in prep, que or run. Then the edges of exactly once: a
 * remote prep deleted (start over), a delivered remote message removed before the relay
 * learned of its commit (err, no second copy), the last try with the remote's state
 * unknown (err naming the remote id), and kill -9 of the local queue process before and
 * after the relay reported `relayed` (no second copy).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { REPO, TestRoot, childrenOf, pidAlive, shortId, useTestRoot, waitFor } from '../helpers/install.js';
import { STRUCK, startFaultProxy, type Fault, type FaultProxy } from '../helpers/fault-proxy.js';
import { rackTemps, startWeb, type Web } from '../helpers/web.js';
import { webPid } from '../helpers/web-process.js';

const localRoot = useTestRoot();
const RELAY_SCRIPT = path.join(REPO, 'libexec/relay_script');
const STATES = ['prep', 'que', 'run', 'done', 'err', 'relayed'] as const;
/** Long enough for a relay that has to wait out a restart or two (retries after 0, 1, 4 s). */
const RELAYED_WITHIN_MS = 20_000;

interface Hosts {
  local: TestRoot;
  remote: TestRoot;
  localWeb: Web;
  remoteWeb: Web;
}

interface HostOptions {
  /** `env_vars` of the local relay queue. */
  relayEnv?: Record<string, string>;
  /** Added to the local rq-mgr's environment. */
  localEnv?: Record<string, string>;
  /** Added to the remote rq-mgr's environment. */
  remoteEnv?: Record<string, string>;
}

/** The two installs, started: local (relay, and `src` running dup.sh) and remote (`test`). */
async function twoHosts(opts: HostOptions = {}): Promise<Hosts> {
  const local = localRoot();
  const remote = new TestRoot();
  onTestFinished(async (ctx) => {
    const passed = ctx.task.result?.state === 'pass';
    if (!passed) console.error(`remote install root kept at ${remote.root}`);
    await remote.cleanup(passed);
  });
  local.addQueue({ name: 'relay', script: RELAY_SCRIPT, env_vars: opts.relayEnv ?? { RELAY_BACKOFF_SECS: '1' } });
  local.addQueue({ name: 'src', script: 'dup.sh' });
  remote.addQueue({ name: 'test', script: 'done.sh' });
  return { local, remote, localWeb: await startWeb(local, {}, opts.localEnv), remoteWeb: await startWeb(remote, {}, opts.remoteEnv) };
}

function remoteUrl(port: number): string {
  return `http://127.0.0.1:${port}/q/test`;
}

/** Run bin/rq on the local install; its stdout must start with `ok `; the rest of the line. */
async function rq(h: Hosts, args: string[]): Promise<string> {
  const r = await h.local.bin('rq', args);
  expect(r, `rq ${args.join(' ')}`).toMatchObject({ code: 0, stdout: expect.stringMatching(/^ok /) });
  return r.stdout.trim().slice(3);
}

/** A file of `bytes` random bytes under the local root; its path and md5. */
function randomFile(h: Hosts, name: string, bytes: number): { file: string; md5: string; size: number } {
  const dir = path.join(h.local.root, 'files');
  fs.mkdirSync(dir, { recursive: true });
  const data = crypto.randomBytes(bytes);
  const file = path.join(dir, name);
  fs.writeFileSync(file, data);
  return { file, md5: crypto.createHash('md5').update(data).digest('hex'), size: bytes };
}

/** A relay message made over the local RPC: prep, attach `files`, commit; its short id. */
async function relayWithFiles(h: Hosts, dest: string, files: string[]): Promise<string> {
  const prep = (await h.local.rpc('relay', 'prep_message', { dest })) as [string, string];
  expect(prep[0]).toBe('ok');
  const id = shortId(prep[1]);
  for (const file of files) expect(await h.local.rpc('relay', 'attach_message', { msg_id: id, pathname: file })).toMatchObject(['ok', expect.any(String)]);
  expect(await h.local.rpc('relay', 'commit_message', { msg_id: id })).toEqual(['ok', 'msg commited']);
  return id;
}

/** Wait for a local relay message to be relayed; the remote full id its status names. */
async function relayedTo(h: Hosts, id: string): Promise<string> {
  const status = await h.local.waitState('relay', id, 'relayed', RELAYED_WITHIN_MS);
  const m = /^relayed - (http:\/\/\S+\/q\/test\/\S+)$/.exec(status);
  expect(m, status).not.toBeNull();
  return m![1]!;
}

/**
 * The relay's stdio.log of a local relay message, wherever the message is now, once it
 * holds a run's first line (` - cwd - `), so a `not.toContain` on it means something.
 */
async function relayLog(h: Hosts, id: string): Promise<string> {
  let log = '';
  await waitFor(
    async () => {
      try {
        const view = await h.local.message('relay', id);
        log = fs.readFileSync(path.join(h.local.root, String(view['path']), 'job/stdio.log'), 'utf8');
      } catch {
        log = ''; // the message moved between the two reads
      }
      return log.includes(' - cwd - ');
    },
    10_000,
    `a relay log of ${id}`,
  );
  return log;
}

/** Every message id of a queue, by state. */
async function idsByState(t: TestRoot, queue: string): Promise<Record<(typeof STATES)[number], string[]>> {
  const out = {} as Record<(typeof STATES)[number], string[]>;
  for (const state of STATES) out[state] = ((await t.rpc(queue, 'messages', { state })) as Array<{ msg_id: string }>).map((r) => r.msg_id);
  return out;
}

/**
 * The end state of a relay of `sent` local messages: each one relayed once, the remote
 * `test` queue holds exactly their copies (all done), and prep, que and run are empty on
 * both sides. Returns the remote short id of each local message.
 */
async function expectDeliveredOnce(h: Hosts, sent: string[], remoteOrigin: string): Promise<Map<string, string>> {
  const remoteOf = new Map<string, string>();
  for (const id of sent) {
    const full = await relayedTo(h, id);
    expect(full.startsWith(`${remoteOrigin}/q/test/`), full).toBe(true);
    remoteOf.set(id, shortId(full));
  }
  const copies = [...remoteOf.values()];
  expect(new Set(copies).size).toBe(sent.length);
  await waitFor(async () => (await idsByState(h.remote, 'test')).done.length >= copies.length, 10_000, 'the copies to be done');
  const remote = await idsByState(h.remote, 'test');
  expect(remote).toEqual({ prep: [], que: [], run: [], done: expect.any(Array), err: [], relayed: [] });
  expect([...remote.done].sort()).toEqual([...copies].sort());
  const local = await idsByState(h.local, 'relay');
  expect({ prep: local.prep, que: local.que, run: local.run }).toEqual({ prep: [], que: [], run: [] });
  return remoteOf;
}

/** kill -9 a process and wait until it is gone (rq-mgr reaps and restarts it). */
async function kill9(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL');
  await waitFor(() => !pidAlive(pid), 5_000, `process ${pid} to die`);
}

describe('delivery', () => {
  it('sendmesg --relay-ok: the remote gets the message with count + 1, the local one ends relayed - <remote full id>', async () => {
    const h = await twoHosts();
    const url = remoteUrl(h.remoteWeb.port);
    const full = await rq(h, ['sendmesg', '--dest', url, '--relay-ok', '--src', 'relay-test', '--param1', 'one', '--param4', 'four']);
    expect(full).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${h.localWeb.port}/q/relay/\\d{8}\\.`));
    const id = shortId(full);
    const remoteFull = await relayedTo(h, id);
    expect(await h.local.bin('rq', ['statusmesg', '--msg_id', full])).toMatchObject({ code: 0, stdout: `ok relayed - ${remoteFull}\n` });
    const remoteId = (await expectDeliveredOnce(h, [id], h.remoteWeb.base)).get(id)!;
    expect(remoteFull).toBe(`${url}/${remoteId}`);
    const copy = await h.remote.message('test', remoteId);
    expect(copy).toMatchObject({ dest: url, src: 'relay-test', param1: 'one', param4: 'four', count: 1, max_count: 15, orig_msg_id: full, status: 'done - all good' });
    const log = await relayLog(h, id);
    for (const line of [`dest - ${url}`, `attempting remote ${url}`, `Now using relay_id: ${remoteFull}`, `relayed ${remoteFull}`]) {
      expect(log).toMatch(new RegExp(`\\x1b\\[0;36m\\d+ - \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d [+-]\\d{4}\\x1b\\[0m - ${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`));
    }
    expect(log).not.toContain('FORCE REMOTE');
    expect(log).not.toContain('The remote answered an id on');
  });

  it('a worker dup to a URL goes through the local relay queue; the copy arrives with its attachment', async () => {
    const h = await twoHosts();
    const url = remoteUrl(h.remoteWeb.port);
    const photo = randomFile(h, 'photo.jpg', 96_007);
    const prep = (await h.local.rpc('src', 'prep_message', { dest: 'src', src: 'dup-test', param1: url })) as [string, string];
    const srcId = shortId(prep[1]);
    await h.local.rpc('src', 'attach_message', { msg_id: srcId, pathname: photo.file });
    await h.local.rpc('src', 'commit_message', { msg_id: srcId });
    const status = await h.local.waitState('src', srcId, 'done');
    const relayFull = /^done - dup ok (http:\/\/\S+\/q\/relay\/\S+)$/.exec(status)?.[1];
    expect(relayFull, status).toBeDefined();
    const id = shortId(relayFull!);
    const remoteId = (await expectDeliveredOnce(h, [id], h.remoteWeb.base)).get(id)!;
    const copy = await h.remote.message('test', remoteId);
    expect(copy).toMatchObject({ dest: url, src: 'dup-test', param1: url, count: 1, orig_msg_id: prep[1] });
    expect(copy['_attachments']).toEqual({ 'photo.jpg': { md5: photo.md5, size: photo.size, path: expect.stringContaining('/attach/photo.jpg') } });
    const download = await fetch(`${h.remoteWeb.base}/q/test/${remoteId}/attach/photo.jpg`);
    expect(download.status).toBe(200);
    expect(crypto.createHash('md5').update(Buffer.from(await download.arrayBuffer())).digest('hex')).toBe(photo.md5);
  });

  it('large attachments (2 × 24 MiB) arrive with the same names, md5s and sizes, and leave no upload temp files', async () => {
    const h = await twoHosts();
    const url = remoteUrl(h.remoteWeb.port);
    const files = [randomFile(h, 'big-one.bin', 24 * 2 ** 20), randomFile(h, 'big-two.bin', 24 * 2 ** 20 + 17)];
    const full = await rq(h, ['prepmesg', '--dest', url, '--relay-ok']);
    for (const f of files) await rq(h, ['attachmesg', '--msg_id', full, '--pathname', f.file]);
    await rq(h, ['commitmesg', '--msg_id', full]);
    const id = shortId(full);
    const remoteId = (await expectDeliveredOnce(h, [id], h.remoteWeb.base)).get(id)!;
    const attachments = (await h.remote.message('test', remoteId))['_attachments'] as Record<string, { md5: string; size: number; path: string }>;
    expect(Object.keys(attachments).sort()).toEqual(['big-one.bin', 'big-two.bin']);
    for (const f of files) {
      const a = attachments[path.basename(f.file)]!;
      expect({ md5: a.md5, size: a.size }).toEqual({ md5: f.md5, size: f.size });
      expect(fs.statSync(a.path).size).toBe(f.size);
    }
    expect(rackTemps(h.remote)).toEqual([]);
    const log = await relayLog(h, id);
    for (const f of files) expect(log).toContain(`attaching ${path.basename(f.file)} (${f.size} bytes, md5 ${f.md5})`);
  });

  it('a remote that answers ids on another origin than RQ_DEST (a load balancer would): logged, and delivered there once', async () => {
    const h = await twoHosts();
    const dest = `http://localhost:${h.remoteWeb.port}/q/test`;
    const id = shortId(await rq(h, ['sendmesg', '--dest', dest, '--relay-ok']));
    const remoteFull = await relayedTo(h, id);
    expect(remoteFull.startsWith(`${h.remoteWeb.base}/q/test/`), remoteFull).toBe(true);
    await expectDeliveredOnce(h, [id], h.remoteWeb.base);
    expect(await relayLog(h, id)).toContain(
      ` - The remote answered an id on ${h.remoteWeb.base}, not on RQ_DEST's http://localhost:${h.remoteWeb.port}: the attachments and the commit go to ${remoteFull}\n`,
    );
  });

  it('force_remote is logged as FORCE REMOTE and not forwarded', async () => {
    const h = await twoHosts();
    const url = remoteUrl(h.remoteWeb.port);
    const full = await rq(h, ['sendmesg', '--dest', url, '--relay-ok', '--force_remote']);
    const id = shortId(full);
    expect(await h.local.message('relay', id)).toMatchObject({ force_remote: true });
    const remoteFull = await relayedTo(h, id);
    expect(await relayLog(h, id)).toContain(' - FORCE REMOTE\n');
    const res = await fetch(`${remoteFull.replace(url, `${h.remoteWeb.base}/q/test`)}.json`);
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain('force_remote');
  });
});

describe('refusals', () => {
  it('a relay to this host\'s own relay queue is a loop: err with RQ\'s text, nothing sent', async () => {
    const h = await twoHosts();
    const full = await rq(h, ['sendmesg', '--dest', `http://127.0.0.1:${h.localWeb.port}/q/relay`, '--relay-ok']);
    await h.local.waitState('relay', shortId(full), 'err');
    expect(await h.local.bin('rq', ['statusmesg', '--msg_id', full])).toMatchObject({
      code: 0,
      stdout: 'ok err - Relay loop detected: RQ_DEST queue same as RQ_ORIG_MSG_ID\n',
    });
    expect(await relayLog(h, shortId(full))).not.toContain('attempting remote');
  });

  it('RQ_COUNT > 15 fails the message without sending it', async () => {
    const h = await twoHosts();
    const full = await rq(h, ['sendmesg', '--dest', remoteUrl(h.remoteWeb.port), '--relay-ok', '--count', '16', '--max_count', '20']);
    await h.local.waitState('relay', shortId(full), 'err');
    expect(await h.local.bin('rq', ['statusmesg', '--msg_id', full])).toMatchObject({ code: 0, stdout: 'ok err - RQ_COUNT > 15 FAIL\n' });
    expect(await relayLog(h, shortId(full))).toContain(' - run RQ_COUNT > 15 - failing\n');
    expect((await idsByState(h.remote, 'test')).prep).toEqual([]);
  });

  it('a RELAY_BACKOFF_SECS that is not a number of seconds sends the message to err, naming it', async () => {
    const h = await twoHosts({ relayEnv: { RELAY_BACKOFF_SECS: 'soon' } });
    const full = await rq(h, ['sendmesg', '--dest', remoteUrl(h.remoteWeb.port), '--relay-ok']);
    expect(await h.local.waitState('relay', shortId(full), 'err')).toBe(
      'err - relay failed: RELAY_BACKOFF_SECS must be a number of seconds, 0 or more, got "soon"',
    );
  });
});

describe('retries', () => {
  it('a remote that is down: soft fails with resend count² × base, then delivery once it is up again', async () => {
    const h = await twoHosts();
    const url = remoteUrl(h.remoteWeb.port);
    expect(await h.remote.bin('rq-mgr', ['stop'])).toMatchObject({ code: 0 });
    const id = shortId(await rq(h, ['sendmesg', '--dest', url, '--relay-ok']));
    const unreachable = `Could not connect to or parse URL: ${url}/new_message`;
    await waitFor(async () => (await relayLog(h, id)).includes(` - resend 1-${unreachable}`), 10_000, 'two failed attempts');
    expect(await relayLog(h, id)).toContain(` - resend 0-${unreachable}`);
    expect(await h.remote.bin('rq-mgr', ['start'])).toMatchObject({ code: 0 });
    const remoteId = (await expectDeliveredOnce(h, [id], h.remoteWeb.base)).get(id)!;
    const relayed = await h.local.message('relay', id);
    expect(relayed['count']).toBeGreaterThanOrEqual(2);
    expect((await h.remote.message('test', remoteId))['count']).toBe((relayed['count'] as number) + 1);
  });
});

/** The request of each step, as the relay sends it. */
const IS_PREP = (method: string, p: string): boolean => method === 'POST' && p === '/q/test/new_message';
const IS_ATTACH = (method: string, p: string): boolean => method === 'POST' && /^\/q\/test\/[^/]+\/attach\/new$/.test(p);
const IS_COMMIT = (method: string, p: string): boolean => method === 'POST' && /^\/q\/test\/[^/]+$/.test(p) && p !== '/q/test/new_message';

/** A fault proxy in front of the remote web, closed when the test ends. */
async function proxyOf(h: Hosts, fault: Fault): Promise<FaultProxy> {
  const proxy = await startFaultProxy(h.remoteWeb.port, fault);
  onTestFinished(() => proxy.close());
  return proxy;
}

/** `sendmesg --relay-ok` of a message to the remote `test` queue through the proxy; the local short id. */
async function sendVia(h: Hosts, proxy: FaultProxy, args: string[] = []): Promise<string> {
  return shortId(await rq(h, ['sendmesg', '--dest', `${proxy.origin}/q/test`, '--relay-ok', ...args]));
}

/** The proxy struck once, and its strike did not throw. */
function expectStruckOnce(proxy: FaultProxy): void {
  expect(proxy.seen.filter((l) => l.startsWith('strike')), proxy.seen.join('\n')).toEqual([STRUCK]);
}

/** Whether the first request after the strike failed: dropped, or not a 200 `["ok", …]`. */
function firstAfterStrikeFailed(proxy: FaultProxy): boolean {
  const next = proxy.seen[proxy.seen.indexOf(STRUCK) + 1];
  expect(next, proxy.seen.join('\n')).toBeDefined();
  return !/^\S+ \S+ 200 \["ok"/.test(next!);
}

const ATTACHMENT_BYTES = 8 * 2 ** 20;
const STEPS: Array<{ step: string; matches: Fault['matches']; when: Fault['when']; logLine: string }> = [
  { step: 'after prep', matches: IS_PREP, when: 'after-reply', logLine: 'Reusing relay_id: ' },
  { step: 'in the middle of an attachment upload', matches: IS_ATTACH, when: { bodyBytes: ATTACHMENT_BYTES / 2 }, logLine: 'Reusing relay_id: ' },
  { step: 'after the commit, before its reply reaches the relay', matches: IS_COMMIT, when: 'instead-of-reply', logLine: 'an earlier attempt delivered it' },
];
const PROCESSES = ['web', 'queue'] as const;

describe('kill -9 of the remote during a transfer', () => {
  const cases = PROCESSES.flatMap((proc) => STEPS.map((s) => ({ proc, ...s })));
  it.each(cases)('the remote $proc process, $step: each message arrives exactly once, intact, nothing left behind', async ({ proc, matches, when, logLine }) => {
    // With rq-mgr's restart 500 ms after a kill, the relay's next step usually meets the
    // process dead; the checks below hold whichever comes first.
    const h = await twoHosts({ remoteEnv: { RQ_RESTART_BACKOFF_MS: '500' } });
    const remote = h.remote;
    const proxy = await proxyOf(h, {
      matches,
      when,
      strike: () => kill9(proc === 'web' ? webPid(remote) : remote.pidIn('queues/test/queue.pid')!),
    });
    const files = [0, 1, 2].map((i) => randomFile(h, `part-${i}.bin`, ATTACHMENT_BYTES + i));
    const sent = [];
    for (const f of files) sent.push(await relayWithFiles(h, `${proxy.origin}/q/test`, [f.file]));

    const remoteOf = await expectDeliveredOnce(h, sent, proxy.origin);
    expectStruckOnce(proxy);
    for (const [i, id] of sent.entries()) {
      const copy = await remote.message('test', remoteOf.get(id)!);
      const name = path.basename(files[i]!.file);
      expect(copy['_attachments']).toEqual({ [name]: { md5: files[i]!.md5, size: files[i]!.size, path: expect.any(String) } });
    }
    // The relay recovered through the kept remote message exactly when the fault was felt:
    // when the request after the strike failed (the proxy's record), not when rq-mgr's
    // restart was faster.
    const logs = await Promise.all(sent.map((id) => relayLog(h, id)));
    expect(logs.some((l) => l.includes(logLine)), `${proxy.seen.join('\n')}\n${logs.join('\n')}`).toBe(firstAfterStrikeFailed(proxy));
    expect(await remote.mgr('restarts')).toMatchObject(proc === 'web' ? { web: 1 } : { queues: { test: 1 } });
  });
});

/** The remote `test` queue's messages, all states together. */
async function allRemote(h: Hosts): Promise<string[]> {
  return Object.values(await idsByState(h.remote, 'test')).flat();
}

/** The remote full id the relay's first prep got (its `Now using relay_id:` line). */
function firstRelayId(log: string): string {
  const m = / - Now using relay_id: (\S+)\n/.exec(log);
  expect(m, log).not.toBeNull();
  return m![1]!;
}

/**
 * Relay one message (`sendmesg` with `args`) through the proxy until it ends, relayed or
 * err; the proxy must have struck once. Its state, its status, and the remote full id
 * its first prep got.
 */
async function endThrough(h: Hosts, proxy: FaultProxy, args: string[] = []): Promise<{ state: string; status: string; remoteFull: string }> {
  const id = await sendVia(h, proxy, args);
  let state: string | undefined;
  await waitFor(
    async () => {
      state = await h.local.state('relay', id);
      return state === 'relayed' || state === 'err';
    },
    RELAYED_WITHIN_MS,
    `${id} to end`,
  );
  expectStruckOnce(proxy);
  return { state: state!, status: (await h.local.statusOf('relay', id))!, remoteFull: firstRelayId(await relayLog(h, id)) };
}

describe('exactly once at the edges', () => {
  it.each([
    { with: 'an attachment (the attach finds it gone)', files: 1 },
    { with: 'no attachment (the commit finds it gone)', files: 0 },
  ])('a remote prep deleted before its commit, $with: the relay starts over with a new remote message, delivered once', async ({ files }) => {
    const h = await twoHosts();
    let deleted = '';
    const proxy = await proxyOf(h, {
      matches: IS_PREP,
      when: 'after-reply',
      strike: async () => {
        const prep = (await h.remote.rpc('test', 'messages', { state: 'prep' })) as Array<{ msg_id: string }>;
        expect(prep).toHaveLength(1);
        deleted = prep[0]!.msg_id;
        expect(await h.remote.rpc('test', 'delete_message', { msg_id: deleted })).toEqual(['ok', 'msg deleted']);
      },
    });
    const attached = files === 1 ? [randomFile(h, 'photo.jpg', 4_321).file] : [];
    const id = await relayWithFiles(h, `${proxy.origin}/q/test`, attached);
    const remoteId = (await expectDeliveredOnce(h, [id], proxy.origin)).get(id)!;
    expectStruckOnce(proxy);
    expect(remoteId).not.toBe(deleted);
    const log = await relayLog(h, id);
    expect(shortId(firstRelayId(log))).toBe(deleted);
    expect(log).toContain(`Remote message [${firstRelayId(log)}] disappeared. Getting new id.`);
    expect(log.match(/ - attempting remote /g)).toHaveLength(2);
  });

  it('a remote message delivered, run and removed before the relay learned its commit went through: err naming it, no second copy', async () => {
    const h = await twoHosts();
    const proxy = await proxyOf(h, {
      matches: IS_COMMIT,
      when: 'instead-of-reply',
      strike: async () => {
        await waitFor(async () => (await idsByState(h.remote, 'test')).done.length === 1, 10_000, 'the copy to be done');
        const [copy] = (await idsByState(h.remote, 'test')).done;
        expect(await h.remote.rpc('test', 'delete_message', { msg_id: copy })).toEqual(['ok', 'msg deleted']);
      },
    });
    const { state, status, remoteFull } = await endThrough(h, proxy);
    expect({ state, status }).toEqual({
      state: 'err',
      status: `err - Remote message [${remoteFull}] gone after its commit was sent: most likely delivered and cleaned up; check ${remoteFull} before cloning`,
    });
    expect(proxy.seen.filter((l) => l.startsWith('POST /q/test/new_message '))).toHaveLength(1);
    expect(await allRemote(h)).toEqual([]);
  });

  it('the last try (max_count) with the remote state unknown: err naming the remote id to check, not HIT MAX RESEND COUNT', async () => {
    const h = await twoHosts();
    const proxy = await proxyOf(h, {
      matches: IS_PREP,
      when: 'after-reply',
      strike: async () => {
        expect(await h.remote.bin('rq-mgr', ['stop'])).toMatchObject({ code: 0 });
      },
    });
    const { state, status, remoteFull } = await endThrough(h, proxy, ['--max_count', '1']);
    expect(state).toBe('err');
    expect(status).toMatch(/^err - Couldn't commit remote message \[/);
    expect(status).toContain('(remote state unknown, keeping its id: ');
    expect(status.endsWith(`; that was the last try (max_count 1) and remote message [${remoteFull}] may hold this message: check ${remoteFull}/state.json before cloning`), status).toBe(true);
  });

  it.each([
    { when: 'before the relay reports (its report meets a closed fd 3)', isAfterReport: false },
    { when: 'after the relay reported relayed, before the message moved', isAfterReport: true },
  ])('kill -9 of the local queue process $when: the rerun finds the copy, no second one', async ({ isAfterReport }) => {
    const h = await twoHosts({ localEnv: { RQ_RESTART_BACKOFF_MS: '300' } });
    let queuePid = 0;
    onTestFinished(() => {
      if (queuePid !== 0 && pidAlive(queuePid)) process.kill(queuePid, 'SIGKILL');
    });
    const proxy = await proxyOf(h, {
      matches: IS_COMMIT,
      when: 'instead-of-reply',
      strike: async () => {
        queuePid = h.local.pidIn('queues/relay/queue.pid')!;
        // Stopped, it reads nothing more from the worker: the report stays unread.
        if (isAfterReport) process.kill(queuePid, 'SIGSTOP');
        else {
          // The script's fd 3 is read by the queue's spawner, which leaves once the queue
          // is gone: only then does the report meet a closed pipe.
          const spawners = childrenOf(queuePid);
          await kill9(queuePid);
          await waitFor(() => spawners.every((pid) => !pidAlive(pid)), 5_000, 'the spawners to leave');
        }
      },
    });
    const id = await sendVia(h, proxy);
    if (isAfterReport) {
      const runLog = path.join(h.local.queueDir('relay'), 'run', id, 'job/stdio.log');
      await waitFor(() => fs.existsSync(runLog) && / - relayed http:\S+\n/.test(fs.readFileSync(runLog, 'utf8')), 10_000, 'the relay to report relayed');
      await kill9(queuePid);
    }
    await expectDeliveredOnce(h, [id], proxy.origin);
    expectStruckOnce(proxy);
    const log = await relayLog(h, id);
    expect(log.match(/ - attempting remote /g)).toHaveLength(1);
    expect(log).toContain('an earlier attempt delivered it');
    expect(log).not.toMatch(/^\s+at /m);
    if (!isAfterReport) expect(log).toContain(' - fd 3 is closed (EPIPE): the local queue process is gone');
    expect(await h.local.mgr('restarts')).toMatchObject({ queues: { relay: 1 } });
  });
});
