/**
 * bin/rq-install (docs/operations.md) run for real against a fresh install root
 * (RQ_ROOT = a temp dir): the exact files it writes, every option in both spellings, the
 * refusal of a second install, what --force keeps, and the input errors.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, runBin, useScratchDir, type CliResult } from '../helpers/ops-tools.js';

const scratch = useScratchDir('rq-install-test-');
const BUILTINS = ['relay', 'webhook', 'cleaner', 'rq_router'] as const;
const STATE_DIRS = ['prep', 'que', 'run', 'done', 'err', 'relayed'];

const DEFAULT_CONFIG = '{"env":"development","host":"127.0.0.1","port":3333,"addr":"127.0.0.1","tmpdir":"/tmp","allow_new_queue":true}\n';

/** Installed outside the package, the built-in scripts are named by absolute path. */
function queueConfigText(name: string): string {
  return `{"name":"${name}","script":"${REPO}/libexec/${name}_script","num_workers":1,"exec_prefix":"","env_vars":{},"coalesce_params":[],"blocking_params":[],"schedule":[]}`;
}

function install(args: readonly string[], root = scratch()): Promise<CliResult> {
  return runBin('bin/rq-install', args, { RQ_ROOT: root });
}

function read(rel: string): string {
  return fs.readFileSync(path.join(scratch(), rel), 'utf8');
}

/** Every path under the root, relative, sorted (to show that a refusal wrote nothing). */
function tree(root: string): string[] {
  return (fs.readdirSync(root, { recursive: true }) as string[]).sort();
}

describe('a fresh install with the defaults', () => {
  it('writes config/config.json in RQ\'s key order, with a newline', async () => {
    const r = await install([]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(read('config/config.json')).toBe(DEFAULT_CONFIG);
  });

  it('creates queues/, the symlink queue -> queues, and log/', async () => {
    await install([]);
    const root = scratch();
    expect(fs.lstatSync(path.join(root, 'queues')).isDirectory()).toBe(true);
    expect(fs.lstatSync(path.join(root, 'queue')).isSymbolicLink()).toBe(true);
    expect(fs.readlinkSync(path.join(root, 'queue'))).toBe('queues');
    expect(fs.lstatSync(path.join(root, 'log')).isDirectory()).toBe(true);
  });

  it.each(BUILTINS)('creates the built-in queue %s: six state dirs and its config.json', async (name) => {
    await install([]);
    const dir = path.join(scratch(), 'queues', name);
    expect(fs.readdirSync(dir).sort()).toEqual([...STATE_DIRS, 'config.json'].sort());
    for (const s of STATE_DIRS) expect(fs.statSync(path.join(dir, s)).isDirectory()).toBe(true);
    expect(read(`queues/${name}/config.json`)).toBe(queueConfigText(name));
    // The script it names is a tracked executable of the repository.
    fs.accessSync(path.join(REPO, 'libexec', `${name}_script`), fs.constants.X_OK);
  });

  it('prints one line per thing it created', async () => {
    const r = await install([]);
    expect(r.stdout.split('\n')).toEqual([
      'Created config/',
      'Created config/config.json',
      'Created queues/',
      'Created queue -> queues',
      'Created log/',
      ...BUILTINS.map((n) => `Created queue ${n} ${queueConfigText(n)}`),
      '',
    ]);
  });

  it('keeps an existing queue symlink as it is', async () => {
    const root = scratch();
    fs.mkdirSync(path.join(root, 'elsewhere'));
    fs.symlinkSync('elsewhere', path.join(root, 'queue'));
    const r = await install([]);
    expect(r.code).toBe(0);
    expect(fs.readlinkSync(path.join(root, 'queue'))).toBe('elsewhere');
    expect(r.stdout).not.toContain('Created queue -> queues');
    expect(r.stderr).toContain('kept the symlink queue -> elsewhere');
  });

  it('refuses a queue that is a real directory, before writing anything', async () => {
    const root = scratch();
    fs.mkdirSync(path.join(root, 'queue'));
    const r = await install([]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('exists and is not a symlink');
    expect(tree(root)).toEqual(['queue']);
  });
});

describe('options, in both spellings', () => {
  const tmp = os.tmpdir();
  const expected = `{"env":"production","host":"rq1.example.com","port":"4000","addr":"0.0.0.0","tmpdir":"${tmp}","allow_new_queue":false}\n`;

  it('--name VALUE', async () => {
    const r = await install(['--env', 'production', '--host', 'rq1.example.com', '--port', '4000', '--addr', '0.0.0.0', '--tmpdir', tmp, '--no-allow-new-queue']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(read('config/config.json')).toBe(expected);
  });

  it('--name=VALUE', async () => {
    const r = await install(['--env=production', '--host=rq1.example.com', '--port=4000', '--addr=0.0.0.0', `--tmpdir=${tmp}`, '--no-allow-new-queue']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(read('config/config.json')).toBe(expected);
  });

  it('--port is stored as a string, as RQ did (the default stays the number 3333)', async () => {
    await install(['--port', '3333']);
    expect(JSON.parse(read('config/config.json'))).toMatchObject({ port: '3333' });
  });

  it('the last of --allow-new-queue / --no-allow-new-queue wins', async () => {
    await install(['--no-allow-new-queue', '--allow-new-queue']);
    expect(JSON.parse(read('config/config.json'))).toMatchObject({ allow_new_queue: true });
  });

  it('a relative --tmpdir is stored as an absolute path (rq-mgr runs from the root)', async () => {
    const root = scratch();
    fs.mkdirSync(path.join(root, 'uploads'));
    const r = await runBin('bin/rq-install', ['--tmpdir', 'uploads'], { RQ_ROOT: root }, root);
    expect(r.code).toBe(0);
    expect(JSON.parse(read('config/config.json'))).toMatchObject({ tmpdir: path.join(root, 'uploads') });
  });

  it('RQ\'s own test run: --force --host 127.0.0.1 --port N --tmpdir /tmp', async () => {
    const r = await install(['--force', '--host', '127.0.0.1', '--port', '3399', '--tmpdir', '/tmp']);
    expect(r.code).toBe(0);
    expect(read('config/config.json')).toBe('{"env":"development","host":"127.0.0.1","port":"3399","addr":"127.0.0.1","tmpdir":"/tmp","allow_new_queue":true}\n');
  });

  it('--help prints the usage and exits 0', async () => {
    const r = await install(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: rq-install');
    expect(tree(scratch())).toEqual([]);
  });
});

describe('an existing install', () => {
  it('without --force: "Already installed", exit 1, nothing changed', async () => {
    await install([]);
    const before = tree(scratch());
    const r = await install(['--port', '4000']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('Already installed\n');
    expect(read('config/config.json')).toBe(DEFAULT_CONFIG);
    expect(tree(scratch())).toEqual(before);
  });

  it('--force rewrites the configs and keeps the messages of a built-in queue', async () => {
    await install([]);
    const root = scratch();
    const msgDir = path.join(root, 'queues/relay/que/20250101.1200.00.123.456');
    fs.mkdirSync(path.join(msgDir, 'job'), { recursive: true });
    fs.writeFileSync(path.join(msgDir, 'msg'), '{"msg_id":"20250101.1200.00.123.456"}');
    fs.writeFileSync(path.join(root, 'queues/relay/config.json'), '{"name":"relay","script":"./mine.sh","num_workers":3}');

    const r = await install(['--force', '--port', '4000']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Replaced config/config.json\n');
    expect(r.stdout).toContain(`Replaced queue relay ${queueConfigText('relay')}\n`);
    expect(JSON.parse(read('config/config.json'))).toMatchObject({ port: '4000' });
    expect(read('queues/relay/config.json')).toBe(queueConfigText('relay'));
    expect(read('queues/relay/que/20250101.1200.00.123.456/msg')).toBe('{"msg_id":"20250101.1200.00.123.456"}');
    expect(fs.readlinkSync(path.join(root, 'queue'))).toBe('queues');
    // No temp file is left behind by the atomic writes.
    expect(tree(root).filter((p) => p.includes('.tmp'))).toEqual([]);
  });

  it('keeps a built-in queue\'s existing config.json when it is not forced', async () => {
    const root = scratch();
    fs.mkdirSync(path.join(root, 'queues/webhook/que'), { recursive: true });
    fs.writeFileSync(path.join(root, 'queues/webhook/config.json'), '{"name":"webhook","script":"./mine.sh","num_workers":2}');
    const r = await install([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Kept queue webhook');
    expect(read('queues/webhook/config.json')).toBe('{"name":"webhook","script":"./mine.sh","num_workers":2}');
    expect(fs.readdirSync(path.join(root, 'queues/webhook')).sort()).toEqual([...STATE_DIRS, 'config.json'].sort());
    expect(read('queues/relay/config.json')).toBe(queueConfigText('relay'));
  });
});

describe('input errors: a clear message, exit 1, nothing written', () => {
  it.each([['0'], ['65536'], ['abc'], ['-1'], ['80x'], ['123456']])('--port %s', async (port) => {
    const r = await install([`--port=${port}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`rq-install: --port must be a number from 1 to 65535, got "${port}"`);
    expect(tree(scratch())).toEqual([]);
  });

  it('--port with no value', async () => {
    const r = await install(['--port']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('rq-install: option --port needs a value');
    expect(tree(scratch())).toEqual([]);
  });

  it('an empty value', async () => {
    const r = await install(['--host=']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('rq-install: option --host needs a value');
  });

  it('--tmpdir that does not exist', async () => {
    const missing = path.join(scratch(), 'nope');
    const r = await install(['--tmpdir', missing]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`rq-install: --tmpdir must be an existing writable directory, got "${missing}" (no such directory)\n`);
    expect(tree(scratch())).toEqual([]);
  });

  it('--tmpdir that is a file', async () => {
    const file = path.join(scratch(), 'afile');
    fs.writeFileSync(file, '');
    const r = await install([`--tmpdir=${file}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('(not a directory)');
    expect(tree(scratch())).toEqual(['afile']);
  });

  it('--tmpdir that is not writable', async () => {
    const dir = path.join(scratch(), 'ro');
    fs.mkdirSync(dir, { mode: 0o555 });
    // Root ignores mode bits; an immutable directory refuses writes even to root.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) execFileSync('chattr', ['+i', dir]);
    try {
      const r = await install(['--tmpdir', dir]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('(not writable)');
    } finally {
      if (asRoot) execFileSync('chattr', ['-i', dir]);
    }
  });

  it('--tmpdir is checked even when the install exists', async () => {
    await install([]);
    const r = await install(['--force', '--tmpdir', '/nonexistent/dir']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('--tmpdir must be an existing writable directory');
    expect(read('config/config.json')).toBe(DEFAULT_CONFIG);
  });

  it('an unknown option: its name and the usage', async () => {
    const r = await install(['--x']);
    expect(r.code).toBe(1);
    expect(r.stderr.split('\n')[0]).toBe('rq-install: unknown option --x');
    expect(r.stderr).toContain('Usage: rq-install [options]');
    expect(tree(scratch())).toEqual([]);
  });

  it.each([['-f'], ['extra'], ['--force=yes'], ['--no-allow-new-queue=1']])('%s is refused', async (arg) => {
    const r = await install([arg]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^rq-install: /);
    expect(tree(scratch())).toEqual([]);
  });
});
