// The worker runner (docs/scripts.md): the argv that Ruby's exec(string) would use
// for "<exec_prefix> <real script>", the start-marker time, stdio.log's start marker before any output, and
// the markers of the start, the status lines and the exit in timeline.log, the end of a run
// when the queue process's loop was busy, and a start refused on a full disk (a small tmpfs, /dev/full).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { localTimestamp } from '../../src/lib/local-time.js';
import { commandArgv, spawnWorker, type SpawnedWorker } from '../../src/spawn/runner.js';
import { smallDisk } from '../helpers/full-disk.js';
import { childrenOf, waitFor } from '../helpers/install.js';

const SCRIPT = '/srv/rq/test/test_script.sh';

describe('commandArgv', () => {
  it('runs through a login bash when exec_prefix is null', () => {
    expect(commandArgv(null, SCRIPT)).toEqual(['bash', '-lc', SCRIPT]);
  });

  it('executes the script directly when exec_prefix is empty', () => {
    expect(commandArgv('', SCRIPT)).toEqual([SCRIPT]);
  });

  it('splits a plain prefix on blanks and trims it', () => {
    expect(commandArgv('nice -n 5', SCRIPT)).toEqual(['nice', '-n', '5', SCRIPT]);
    expect(commandArgv('  bash -lc  ', SCRIPT)).toEqual(['bash', '-lc', SCRIPT]);
    expect(commandArgv('ruby\t-w', SCRIPT)).toEqual(['ruby', '-w', SCRIPT]);
    expect(commandArgv('   ', SCRIPT)).toEqual([SCRIPT]);
  });

  it.each([
    ['*'], ['?'], ['{'], ['}'], ['['], [']'], ['<'], ['>'], ['('], [')'], ['~'], ['&'], ['|'], ['\\'], ['$'], [';'],
    ["'"], ['"'], ['`'], ['\n'], ['#'],
  ])('runs through /bin/sh -c when the command contains %j', (meta) => {
    const prefix = `env X${meta}`;
    expect(commandArgv(prefix, SCRIPT)).toEqual(['/bin/sh', '-c', `${prefix} ${SCRIPT}`]);
  });

  it('runs through /bin/sh -c when the command starts with NAME=value', () => {
    expect(commandArgv('FOO=1', SCRIPT)).toEqual(['/bin/sh', '-c', `FOO=1 ${SCRIPT}`]);
    expect(commandArgv('_X9=a nice', SCRIPT)).toEqual(['/bin/sh', '-c', `_X9=a nice ${SCRIPT}`]);
  });

  it('does not take a later = or a leading =/digit for an assignment', () => {
    expect(commandArgv('env A=1', SCRIPT)).toEqual(['env', 'A=1', SCRIPT]);
    expect(commandArgv('9X=1', SCRIPT)).toEqual(['9X=1', SCRIPT]);
  });

  it('runs a script path with shell characters through /bin/sh as one string', () => {
    expect(commandArgv('', '/srv/rq (copy)/s.sh')).toEqual(['/bin/sh', '-c', '/srv/rq (copy)/s.sh']);
  });
});

describe('localTimestamp', () => {
  const saved = process.env['TZ'];
  afterEach(() => {
    if (saved === undefined) delete process.env['TZ'];
    else process.env['TZ'] = saved;
  });

  const AT = new Date(Date.UTC(2026, 10, 21, 5, 27, 44, 900));

  it('formats like RQ\'s start marker in UTC', () => {
    process.env['TZ'] = 'UTC';
    expect(localTimestamp(AT)).toBe('2026-11-21 05:27:44 +0000');
  });

  it('uses local time with a negative offset', () => {
    process.env['TZ'] = 'America/New_York';
    expect(localTimestamp(AT)).toBe('2026-11-21 00:27:44 -0500');
  });

  it('prints half-hour offsets and crosses the date line', () => {
    process.env['TZ'] = 'Asia/Kolkata';
    expect(localTimestamp(new Date(Date.UTC(2026, 11, 31, 20, 0, 5)))).toBe('2027-01-01 01:30:05 +0530');
  });

  it('zero-pads every field', () => {
    process.env['TZ'] = 'UTC';
    expect(localTimestamp(new Date(Date.UTC(2001, 0, 2, 3, 4, 5)))).toBe('2001-01-02 03:04:05 +0000');
  });
});

describe('spawnWorker', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-test-runner-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Block this thread (the event loop) for `ms`, as a long synchronous step of the queue process would. */
  const blockLoop = (ms: number): void => {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  };

  /** Start a `sh` script of this body: its status lines so far, and `ended` once its exit is reported. */
  const start = (body: string): { worker: SpawnedWorker; lines: string[]; ended: Promise<void> } => {
    const script = path.join(dir, 'worker.sh');
    fs.writeFileSync(script, `#!/bin/sh\n${body}`, { mode: 0o755 });
    const lines: string[] = [];
    let reported = (): void => {};
    const ended = new Promise<void>((resolve) => (reported = resolve));
    const worker = spawnWorker({
      argv: [script],
      cwd: dir,
      env: {},
      logFile: path.join(dir, 'stdio.log'),
      realScript: script,
      onLine: (line) => lines.push(line),
      onExit: () => reported(),
    });
    return { worker, lines, ended };
  };

  it('reads the status pipe before its drain grace ends, even when the loop was blocked past it', async () => {
    // The script exits at once; a process it leaves behind holds fd 3 and reports done later.
    const { worker, lines, ended } = start('(sleep 0.3; echo done >&3) &\nexit 0\n');
    // Once the exit has been seen (the worker reaped: the 100 ms grace is running), a
    // step after the loop's I/O poll keeps it busy for 800 ms, and the report arrives in
    // the middle of it. The loop's next turn starts with its timers.
    while (fs.existsSync(`/proc/${worker.pid}`)) await new Promise((resolve) => setTimeout(resolve, 2));
    await new Promise((resolve) => setImmediate(resolve));
    blockLoop(800);
    await ended;
    expect(lines).toEqual(['done']);
  });

  it('a held status pipe gives up no line until it is let go', async () => {
    // Both lines are written at once; the worker then sleeps for half a second.
    const { worker, lines, ended } = start('echo "run 1" >&3\necho done >&3\nsleep 0.5\n');
    let over = false;
    void ended.then(() => (over = true));
    // Held from the start, as a spawner holds a worker while its lines are on their way.
    worker.holdLines(true);
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect({ over, lines }).toEqual({ over: false, lines: [] });
    worker.holdLines(false);
    await ended;
    expect(lines).toEqual(['run 1', 'done']);
  });

  /** A marker line of worker `pid` (lib/log-markers.ts), its time any, its text matching the pattern `text`. */
  const marker = (pid: number, word: string, text: string): RegExp =>
    new RegExp(`^${pid} - \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d [+-]\\d{4} - RQ ${word} - ${text}$`);
  /** The start marker's pattern: the script's path. */
  const started = (pid: number): RegExp => marker(pid, 'START', path.join(dir, 'worker.sh').replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  it("writes stdio.log as the start marker, then the script's output (even output written at once), nothing else", async () => {
    const { worker, ended } = start(`printf "half "\necho "run one" >&3\necho out\necho "done two" >&3\necho err >&2\nprintf "last, unfinished"\nexit 3\n`);
    await ended;
    const log = fs.readFileSync(path.join(dir, 'stdio.log'), 'utf8').split('\n');
    expect(log).toEqual([expect.stringMatching(started(worker.pid)), 'half out', 'err', 'last, unfinished']);
    // A second run's marker starts a line of its own: after a newline only where the last run left its line unfinished.
    const second = start('echo again\n');
    await second.ended;
    const third = start('echo thrice\n');
    await third.ended;
    expect(fs.readFileSync(path.join(dir, 'stdio.log'), 'utf8').split('\n')).toEqual([
      expect.stringMatching(started(worker.pid)),
      'half out',
      'err',
      'last, unfinished',
      expect.stringMatching(started(second.worker.pid)),
      'again',
      expect.stringMatching(started(third.worker.pid)),
      'thrice',
      '',
    ]);
  });

  it('runs the command in the pid it reports, with fd 5 closed and stdin /dev/null', async () => {
    const { worker, lines, ended } = start('echo "pid $$" >&3\n[ -e /dev/fd/5 ] && echo "fd 5 open" >&3\nreadlink /proc/$$/fd/0 >&3\n');
    await ended;
    expect(lines).toEqual([`pid ${worker.pid}`, '/dev/null']);
  });

  it('reports a command that cannot be executed as a failed spawn, as before', () => {
    const script = path.join(dir, 'nointerp.sh');
    fs.writeFileSync(script, '#!/nonexistent/interpreter\n', { mode: 0o755 });
    const spec = { argv: [script], cwd: dir, env: {}, logFile: path.join(dir, 'stdio.log'), realScript: script, onLine: () => {}, onExit: () => {} };
    expect(() => spawnWorker(spec)).toThrow(/^cannot spawn /);
    expect(() => spawnWorker({ ...spec, argv: ['no-such-command-here', script] })).toThrow(/^cannot spawn /);
  });

  it('writes its start, each status line and its exit to timeline.log, one line each', async () => {
    const { worker, ended } = start(`printf "half "\necho "run one" >&3\necho "done two" >&3\nexit 3\n`);
    await ended;
    const lines = fs.readFileSync(path.join(dir, 'timeline.log'), 'utf8').split('\n');
    expect(lines).toEqual([
      expect.stringMatching(started(worker.pid)),
      expect.stringMatching(marker(worker.pid, 'STATUS', 'run one')),
      expect.stringMatching(marker(worker.pid, 'STATUS', 'done two')),
      expect.stringMatching(marker(worker.pid, 'EXIT', 'code 3 - ran \\d+ ms')),
      '',
    ]);
    // The same start, at the same time, as in stdio.log.
    expect(fs.readFileSync(path.join(dir, 'stdio.log'), 'utf8').split('\n')[0]).toBe(lines[0]);
  });

  /** A spec for a worker that would run for 5 s, its log at `logFile`. */
  const sleeper = (logFile: string): Parameters<typeof spawnWorker>[0] => {
    const script = path.join(dir, 'worker.sh');
    fs.writeFileSync(script, '#!/bin/sh\nsleep 5\n', { mode: 0o755 });
    return { argv: [script], cwd: dir, env: {}, logFile, realScript: script, onLine: () => {}, onExit: () => {} };
  };

  it('starts nothing on a full disk: ENOSPC, before any fork', () => {
    const jobDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-test-runner-disk-'));
    onTestFinished(() => fs.rmSync(jobDir, { recursive: true, force: true }));
    smallDisk(jobDir, 64 * 1024).fill();
    const before = childrenOf(process.pid);
    expect(() => spawnWorker(sleeper(path.join(jobDir, 'stdio.log')))).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    expect(childrenOf(process.pid)).toEqual(before);
  });

  it('kills the worker at once when its start marker cannot be written: ENOSPC, and nothing runs on', async () => {
    const before = childrenOf(process.pid);
    expect(() => spawnWorker(sleeper('/dev/full'))).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    await waitFor(() => JSON.stringify(childrenOf(process.pid)) === JSON.stringify(before), 2_000, 'the worker to be gone');
  });
});
