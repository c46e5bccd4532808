/**
 * The real `bin/rq` against real queue processes (docs/cli.md): every subcommand's
 * round trip and output line, RQ's option forms, the help and its exit status, and the
 * clear one-line errors on stderr (with nothing on stdout) where RQ crashed.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { runRq, RQ_BIN, type CliResult } from '../helpers/cli.js';
import { TestRoot, shortId, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
let t: TestRoot;
beforeEach(() => {
  t = root();
});

const FULL_ID = /^http:\/\/127\.0\.0\.1:3333\/q\/([^/]+)\/(\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+)$/;

const rq = (...args: string[]): Promise<CliResult> => runRq(t.root, args);

/** Run a command that must succeed with one `ok <x>` line; returns `<x>`. */
async function ok(...args: string[]): Promise<string> {
  const r = await rq(...args);
  expect(r, `rq ${args.join(' ')}`).toMatchObject({ code: 0, stderr: '' });
  const m = /^ok (.*)\n$/.exec(r.stdout);
  expect(m, `stdout of rq ${args.join(' ')}: ${JSON.stringify(r.stdout)}`).not.toBeNull();
  return m![1]!;
}

/** An error RQ crashed on: exit 1, nothing on stdout, the given line first on stderr. */
function expectCrashLine(r: CliResult, line: string): void {
  expect(r.code).toBe(1);
  expect(r.stdout).toBe('');
  expect(r.stderr.split('\n')[0]).toBe(line);
}

async function startQueue(name: string, script = 'done.sh', extra: Record<string, unknown> = {}): Promise<void> {
  t.addQueue({ name, script, num_workers: 1, ...extra });
  await t.start(name);
}

describe('bin/rq round trips', () => {
  it('sendmesg runs a message to done; statusmesg and state print its status and state', async () => {
    await startQueue('q1');
    const full = await ok('sendmesg', '--dest=q1', '--src', 'cli test', '--param1=a=b');
    const [, queue, id] = FULL_ID.exec(full)!;
    expect(queue).toBe('q1');
    await t.waitState('q1', id!, 'done');
    expect(await rq('statusmesg', '--msg_id', full)).toEqual({ code: 0, stdout: 'ok done - all good\n', stderr: '' });
    expect(await rq('state', `--msg_id=${full}`)).toEqual({ code: 0, stdout: 'ok done\n', stderr: '' });
    // Only the given keys are sent; `--k=v` splits at the first `=`.
    const msg = await t.message('q1', id!);
    expect(msg).toMatchObject({ dest: 'q1', src: 'cli test', param1: 'a=b', count: 0, max_count: 15 });
    expect(msg).not.toHaveProperty('param2');
  });

  it('prints an err status, and clones a finished message', async () => {
    await startQueue('q1', 'err.sh');
    const full = await ok('sendmesg', '--dest', 'q1');
    await t.waitState('q1', shortId(full), 'err');
    expect(await rq('statusmesg', '--msg_id', full)).toEqual({ code: 0, stdout: 'ok err - by design\n', stderr: '' });
    expect(await rq('state', '--msg_id', full)).toEqual({ code: 0, stdout: 'ok err\n', stderr: '' });

    const clone = await ok('clone', '--msg_id', full);
    expect(clone).toMatch(FULL_ID);
    expect(clone).not.toBe(full);
    await t.waitState('q1', shortId(clone), 'err');
    expect(await t.message('q1', shortId(clone))).toMatchObject({ cloned_from: shortId(full), count: 0 });
  });

  it('prepmesg, attachmesg (relative path, from another cwd), commitmesg, attachstatusmesg', async () => {
    await startQueue('q1');
    const work = fs.mkdtempSync(path.join(t.root, 'work-'));
    const data = crypto.randomBytes(5000);
    fs.writeFileSync(path.join(work, 'data.bin'), data);
    const md5 = crypto.createHash('md5').update(data).digest('hex');

    const full = await ok('prepmesg', '--dest', 'q1', '--param1', 'x');
    const id = shortId(full);
    expect(await t.state('q1', id)).toBe('prep');

    const attach = await runRq(t.root, ['attachmesg', '--msg_id', full, '--pathname', 'data.bin'], { cwd: work });
    expect(attach).toEqual({ code: 0, stdout: `ok ${md5}-Attached successfully for Message: ${full} attachment\n`, stderr: '' });
    const named = await runRq(t.root, ['attachmesg', `--msg_id=${full}`, '--pathname=./data.bin', '--name', 'copy.bin'], { cwd: work });
    expect(named.stdout).toBe(`ok ${md5}-Attached successfully for Message: ${full} attachment\n`);

    expect(await rq('commitmesg', '--msg_id', full)).toEqual({ code: 0, stdout: 'ok msg commited\n', stderr: '' });
    await t.waitState('q1', id, 'done');

    // done/ is hashed by the id's date, hour and minute: 20261121.0738.… → 20261121/07/38/.
    const attachDir = path.join(t.root, 'queue', 'q1', 'done', id.slice(0, 8), id.slice(9, 11), id.slice(11, 13), id, 'attach');
    const status = await rq('attachstatusmesg', '--msg_id', full);
    expect(status.code).toBe(0);
    const lines = status.stdout.split('\n');
    expect(lines[0]).toBe('ok 2');
    expect(lines.slice(1, 3).sort()).toEqual([
      `copy.bin ${md5} 5000 ${path.join(attachDir, 'copy.bin')}`,
      `data.bin ${md5} 5000 ${path.join(attachDir, 'data.bin')}`,
    ]);
    expect(lines.slice(3)).toEqual(['']);
    expect(fs.readFileSync(path.join(attachDir, 'data.bin')).equals(data)).toBe(true);

    // The message left prep: the queue's fail line, with RQ's suffix, and exit 1.
    const late = await runRq(t.root, ['attachmesg', '--msg_id', full, '--pathname', 'data.bin'], { cwd: work });
    expect(late).toEqual({ code: 1, stdout: `fail cannot find message for Message: ${full} attachment\n`, stderr: '' });
    // A second commit fails the same way.
    expect(await rq('commitmesg', '--msg_id', full)).toEqual({ code: 1, stdout: 'fail cannot find message\n', stderr: '' });
  });

  it('attachstatusmesg of a message without attachments prints ok 0', async () => {
    await startQueue('q1');
    const full = await ok('sendmesg', '--dest', 'q1');
    await t.waitState('q1', shortId(full), 'done');
    expect(await rq('attachstatusmesg', '--msg_id', full)).toEqual({ code: 0, stdout: 'ok 0\n', stderr: '' });
  });

  it('single_que returns the waiting message instead of a second one', async () => {
    await startQueue('q1', 'done.sh', { num_workers: 0 });
    const first = await ok('single_que', '--dest', 'q1', '--param1', 'a');
    const second = await ok('single_que', '--dest=q1', '--param1=b');
    expect(first).toMatch(FULL_ID);
    expect(second).toBe(first);
    expect(await t.rpc('q1', 'num_messages', {})).toMatchObject({ que: 1 });
  });

  it('statuscountmesg prints the resend count', async () => {
    await startQueue('q1', 'resend.sh');
    const full = await ok('sendmesg', '--dest', 'q1', '--param1', '1');
    expect(await t.waitState('q1', shortId(full), 'done')).toBe('done - after 1');
    expect(await rq('statuscountmesg', '--msg_id', full)).toEqual({ code: 0, stdout: 'ok 1\n', stderr: '' });
  });

  it('passes bare flags as JSON true and keeps the last of a repeated option', async () => {
    await startQueue('q1', 'done.sh', { num_workers: 0 });
    const full = await ok('sendmesg', '--dest', 'q1', '--force_remote', '--param2', 'first', 'ignored', '--param2=second', '--count', '3');
    const msg = await t.message('q1', shortId(full));
    expect(msg).toMatchObject({ force_remote: true, param2: 'second', count: 3 });
    expect(msg).not.toHaveProperty('relay-ok');
  });

  it('sends a URL destination to the relay queue with --relay-ok', async () => {
    await startQueue('relay', 'done.sh', { num_workers: 0 });
    const dest = 'http://127.0.0.1:3334/q/elsewhere';
    const bare = await ok('sendmesg', '--dest', dest, '--relay-ok');
    expect(FULL_ID.exec(bare)?.[1]).toBe('relay');
    expect(await t.message('relay', shortId(bare))).toMatchObject({ dest });
    expect(await t.message('relay', shortId(bare))).not.toHaveProperty('relay-ok');
    const valued = await ok('prepmesg', `--dest=${dest}`, '--relay-ok=yes');
    expect(FULL_ID.exec(valued)?.[1]).toBe('relay');
    expect(await t.state('relay', shortId(valued))).toBe('prep');
  });

  it('verify_rules checks a router rules file: ok, or RQ\'s fail line with the problem on stderr', async () => {
    const rules = path.join(t.root, 'rules.json');
    fs.writeFileSync(rules, JSON.stringify([{ name: 'stats', action: 'relay', dest: '^stats', route: ['h1', 'h2:4000'] }]));
    expect(await rq('verify_rules', '--path', rules)).toEqual({ code: 0, stdout: 'ok\n', stderr: '' });
    // --verbose: each rule as the router will use it, the built-in default last; a relative path is from the cwd.
    const verbose = await runRq(t.root, ['verify_rules', '--path=rules.json', '--verbose'], { cwd: t.root });
    expect(verbose).toEqual({
      code: 0,
      stdout:
        '{"name":"stats","action":"relay","src":null,"dest":"^stats","route":["h1","h2:4000"],"log":false,"delay":0}\n' +
        '{"name":"default","action":"err","src":null,"dest":null,"route":[],"log":true,"delay":0}\n' +
        'ok\n',
      stderr: '',
    });
    // A conditional action is resolved with the caller's environment.
    fs.writeFileSync(rules, JSON.stringify([{ name: 'default', action: { env: 'BR_ENV', equals: 'prod', then: 'done', else: 'err' } }]));
    const prod = await runRq(t.root, ['verify_rules', '--path', rules, '--verbose'], { env: { BR_ENV: 'prod' } });
    expect(prod.stdout).toBe('{"name":"default","action":"done","src":null,"dest":null,"route":[],"log":false,"delay":0}\nok\n');

    fs.writeFileSync(rules, JSON.stringify([{ name: 'stats', action: 'relay', dest: '^stats' }]));
    expect(await rq('verify_rules', '--path', rules)).toEqual({
      code: 1,
      stdout: 'fail bad router rules file\n',
      stderr: `${rules}: rule 1 ("stats"): "route" is required for action relay: the hosts to send to\n`,
    });
    const missing = path.join(t.root, 'missing.json');
    const r = await rq('verify_rules', '--path', missing, '--verbose');
    expect(r).toMatchObject({ code: 1, stdout: 'fail bad router rules file\n' });
    expect(r.stderr.startsWith(`${missing}: cannot read the rules file: ENOENT`)).toBe(true);
  });

  it('verify_rules refuses RQ\'s Ruby rules, by name or by text, pointing to the JSON form; every problem is one line', async () => {
    const notRead = "RQ's Ruby rules are not read; rq's rules are JSON in config/rq_router_rules.json (docs/router.md)";
    const ruby = 'rule "stats"\naction :relay\ndest /^stats/\nroute "h1"\n\n';
    for (const name of ['rq_router_rules.rb', 'rules.json']) {
      const file = path.join(t.root, name);
      fs.writeFileSync(file, ruby);
      expect(await rq('verify_rules', '--path', file), name).toEqual({ code: 1, stdout: 'fail bad router rules file\n', stderr: `${file}: ${notRead}\n` });
    }
    const broken = path.join(t.root, 'broken.json');
    fs.writeFileSync(broken, '[{"name": "r",\n"dest"}]');
    const r = await rq('verify_rules', '--path', broken);
    expect(r).toMatchObject({ code: 1, stdout: 'fail bad router rules file\n' });
    expect(r.stderr.startsWith(`${broken}: not valid JSON: `)).toBe(true);
    expect(r.stderr.split('\n')).toHaveLength(2); // one line, then the end of it
  });
});

describe('bin/rq failures', () => {
  it('prints the help on no arguments, -h and --help, and exits 1', async () => {
    const help =
      'Valid commands are:\n' +
      ['attachmesg', 'attachstatusmesg', 'clone', 'commitmesg', 'prepmesg', 'sendmesg', 'single_que', 'state', 'statuscountmesg', 'statusmesg', 'verify_rules']
        .map((c) => `  ${c}\n`)
        .join('');
    for (const args of [[], ['-h'], ['--help'], ['sendmesg', '--dest', 'q1', '-h']]) {
      expect(await rq(...args), args.join(' ')).toEqual({ code: 1, stdout: help, stderr: '' });
    }
  });

  it('names an unknown command', async () => {
    expect(await rq('sendmsg', '--dest', 'q1')).toEqual({ code: 1, stdout: '', stderr: 'Command not found: sendmsg (cmd_sendmsg)\n' });
  });

  it('names a missing required option', async () => {
    expectCrashLine(await rq('sendmesg', '--src', 'x'), 'Missing argument: --dest');
    expectCrashLine(await rq('single_que'), 'Missing argument: --dest');
    expectCrashLine(await rq('statusmesg'), 'Missing argument: --msg_id');
    // A bare flag is not a value.
    expectCrashLine(await rq('state', '--msg_id'), 'Missing argument: --msg_id');
    expectCrashLine(await rq('attachmesg', '--msg_id', 'http://h:1/q/q1/20261121.0527.42.578.1'), 'Missing argument: --pathname');
    expectCrashLine(await rq('verify_rules'), 'Missing argument: --path');
  });

  it('names an unknown queue', async () => {
    t.addQueue({ name: 'q1' });
    expectCrashLine(await rq('sendmesg', '--dest', 'nope'), 'Queue not found: nope');
    expectCrashLine(await rq('sendmesg', '--dest', 'bad.name'), 'Queue not found: bad.name');
    expectCrashLine(await rq('sendmesg', '--dest', '..'), 'Queue not found: ..');
    expectCrashLine(await rq('statusmesg', '--msg_id', 'http://127.0.0.1:3333/q/nope/20261121.0527.42.578.1'), 'Queue not found: nope');
    const short = await rq('statusmesg', '--msg_id', '20261121.0527.42.578.1');
    expect(short).toMatchObject({ code: 1, stdout: '' });
    expect(short.stderr).toMatch(/^Queue not found: --msg_id 20261121\.0527\.42\.578\.1 names no queue/);
    // A URL destination is a queue name only through the relay.
    expectCrashLine(await rq('single_que', '--dest', 'http://127.0.0.1:3333/q/q1'), 'Queue not found: http://127.0.0.1:3333/q/q1');
  });

  it('says when the queue process is not running, and that nothing was done (exit 75: try again)', async () => {
    t.addQueue({ name: 'q1' });
    const socket = path.join(t.root, 'queues', 'q1', 'queue.sock');
    const send = await rq('sendmesg', '--dest', 'q1');
    expect(send).toEqual({ code: 75, stdout: '', stderr: `Queue q1 on ${socket} is not answering (ENOENT), and nothing was done: try again\n` });
    const state = await rq('state', '--msg_id', 'http://127.0.0.1:3333/q/q1/20261121.0527.42.578.1');
    expect(state).toEqual({ code: 75, stdout: '', stderr: `Queue q1 on ${socket} is not answering (ENOENT): try again\n` });
  });

  it('refuses a URL destination without --relay-ok', async () => {
    await startQueue('relay', 'done.sh', { num_workers: 0 });
    expectCrashLine(await rq('sendmesg', '--dest', 'http://127.0.0.1:3334/q/x'), 'Cannot relay message: http://127.0.0.1:3334/q/x needs --relay-ok');
    expectCrashLine(await rq('prepmesg', '--dest=http://127.0.0.1:3334/q/x'), 'Cannot relay message: http://127.0.0.1:3334/q/x needs --relay-ok');
    expect(await t.rpc('relay', 'num_messages', {})).toMatchObject({ prep: 0, que: 0 });
  });

  it('fails the attachment pre-check with the reason', async () => {
    await startQueue('q1');
    const full = await ok('prepmesg', '--dest', 'q1');
    const missing = path.join(t.root, 'nothing-here');
    expectCrashLine(await rq('attachmesg', '--msg_id', full, '--pathname', missing), `No such file ${missing} to attach to message`);
    expectCrashLine(await rq('attachmesg', '--msg_id', full, '--pathname', 'queues'), `Attachment currently cannot be a directory ${path.join(t.root, 'queues')}`);
    expectCrashLine(await rq('attachmesg', '--msg_id', full, '--pathname', '/dev/null'), 'Attachment currently not of supported type: /dev/null');
  });

  it('prints the fail line and exits 1 for an unknown message', async () => {
    await startQueue('q1');
    const unknown = 'http://127.0.0.1:3333/q/q1/20261121.0527.42.578.1';
    for (const cmd of ['statusmesg', 'state', 'statuscountmesg', 'attachstatusmesg', 'clone']) {
      expect(await rq(cmd, '--msg_id', unknown), cmd).toEqual({ code: 1, stdout: 'fail msg not found\n', stderr: '' });
    }
  });

  it('prints fail status: DOWN for a queue that is admin DOWN', async () => {
    await startQueue('q1');
    const full = await ok('sendmesg', '--dest', 'q1');
    await t.waitState('q1', shortId(full), 'done');
    fs.writeFileSync(path.join(t.root, 'config', 'q1.down'), '');
    expect(await rq('statusmesg', '--msg_id', full)).toEqual({ code: 1, stdout: 'fail status: DOWN\n', stderr: '' });
    expect(await rq('sendmesg', '--dest', 'q1')).toEqual({ code: 1, stdout: 'fail status: DOWN\n', stderr: '' });
  });
});

describe('bin/rq from elsewhere', () => {
  it('works from any cwd and through a symlink', async () => {
    await startQueue('q1');
    const link = path.join(t.root, 'rq-link');
    fs.symlinkSync(RQ_BIN, link);
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-cwd-'));
    try {
      const sent = await runRq(t.root, ['sendmesg', '--dest', 'q1'], { bin: link, cwd: elsewhere });
      expect(sent.code).toBe(0);
      const full = /^ok (\S+)\n$/.exec(sent.stdout)![1]!;
      await t.waitState('q1', shortId(full), 'done');
      expect(await runRq(t.root, ['statusmesg', '--msg_id', full], { cwd: '/' })).toEqual({ code: 0, stdout: 'ok done - all good\n', stderr: '' });
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
