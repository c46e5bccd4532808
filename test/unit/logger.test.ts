/**
 * The log destination (src/lib/logger.ts) against real failing files: /dev/full, a small
 * tmpfs filled to the last byte (test/helpers/full-disk.ts) and freed again, a pipe whose
 * reader has gone, and a file renamed away by logrotate. A logger that cannot write never
 * throws and never takes its process down; it counts what it dropped and says so, in
 * whole lines, once it can write again.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { createLogDestination, createLogger } from '../../src/lib/logger.js';
import { REPO, waitFor } from '../helpers/install.js';
import { smallDisk } from '../helpers/full-disk.js';

let dir: string;
beforeEach(() => {
  const made = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-logger-'));
  dir = made;
  // After the test's own hooks (they run in reverse order): a disk mounted in it is gone by then.
  onTestFinished(() => fs.rmSync(made, { recursive: true, force: true }));
});

/** Run `code` (an ES module using the built logger as `createLogger`) in a node process; its exit code and stderr. */
function runNode(code: string, stdout: 'pipe' | number): { child: ReturnType<typeof spawn>; done: Promise<{ code: number | null; stderr: string }> } {
  const logger = path.join(REPO, 'dist/src/lib/logger.js');
  const child = spawn(process.execPath, ['--input-type=module', '-e', `import { createLogger } from ${JSON.stringify(logger)};\n${code}`], { stdio: ['ignore', stdout, 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) => child.once('exit', (c) => resolve({ code: c, stderr })));
  return { child, done };
}

/** The lines of a log file, each parsed: a line that is not whole JSON fails the test. */
function lines(file: string): Array<Record<string, unknown>> {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('a log that cannot be written', () => {
  it('on stdout to /dev/full: the process logs on, runs to its end and exits 0', async () => {
    const full = fs.openSync('/dev/full', 'w');
    const { child, done } = runNode(
      `const log = createLogger({ component: 't' });
       for (let i = 0; i < 1000; i++) log.info({ i }, 'line');
       await new Promise((r) => setTimeout(r, 200));
       log.info('later');
       await new Promise((r) => log.flush(r));
       process.stderr.write('alive\\n');`,
      full,
    );
    fs.closeSync(full);
    let hung: NodeJS.Timeout | undefined;
    const result = await Promise.race([done, new Promise<{ code: string }>((r) => (hung = setTimeout(() => r({ code: 'still running after 15 s' }), 15_000)))]);
    clearTimeout(hung);
    child.kill('SIGKILL');
    expect(result).toEqual({ code: 0, stderr: 'alive\n' });
  });

  it('on stdout to a pipe whose reader has gone: the process logs on and exits 0 when told', async () => {
    const { child, done } = runNode(
      `const log = createLogger({ component: 't' });
       const tick = setInterval(() => log.info('tick'), 5);
       setTimeout(() => { clearInterval(tick); process.stderr.write('alive\\n'); }, 500);`,
      'pipe',
    );
    child.stdout!.destroy();
    expect(await done).toEqual({ code: 0, stderr: 'alive\n' });
  });

  it('on a full disk: drops and counts lines, and writes the count, in whole lines, once there is room', async () => {
    const disk = smallDisk(path.join(dir, 'log'), 64 * 1024);
    const file = path.join(dir, 'log', 'rq.log');
    const dest = createLogDestination({ file }, { component: 'unit' });
    const log = createLogger({ component: 'unit' }, dest);
    log.info('before');
    await new Promise<void>((r) => log.flush(() => r()));
    disk.fill();
    for (let i = 0; i < 500; i++) log.info({ i }, 'line');
    await new Promise<void>((r) => log.flush(() => r()));
    dest.flushSync();
    disk.free();
    await waitFor(() => fs.readFileSync(file, 'utf8').includes('log lines dropped'), 5_000, 'the count of dropped lines');
    log.info('after');
    await new Promise<void>((r) => log.flush(() => r()));

    const all = lines(file);
    const drop = all.find((l) => /dropped/.test(String(l['msg'])))!;
    expect(drop).toMatchObject({ level: 40, component: 'unit', pid: process.pid, msg: `${String(drop['dropped'])} log lines dropped (ENOSPC)` });
    const written = all.filter((l) => l['msg'] === 'line').map((l) => l['i']);
    // Every line is either written, once and in order, or counted.
    expect(written).toEqual([...written].sort((a, b) => Number(a) - Number(b)));
    expect(new Set(written).size).toBe(written.length);
    expect(written.length + Number(drop['dropped'])).toBe(500);
    expect(Number(drop['dropped'])).toBeGreaterThan(0);
    expect(all.map((l) => l['msg']).slice(-1)).toEqual(['after']);
    expect(all[0]!['msg']).toBe('before');
  });

  it('reopens its file on request (logrotate): lines before it go to the old file, lines after it to the new one', async () => {
    const file = path.join(dir, 'rq.log');
    const dest = createLogDestination({ file });
    dest.write('{"n":1}\n');
    await new Promise<void>((r) => dest.flush(r));
    fs.renameSync(file, `${file}.1`);
    dest.write('{"n":2}\n');
    dest.reopen();
    dest.write('{"n":3}\n');
    await new Promise<void>((r) => dest.flush(r));
    expect(lines(`${file}.1`).map((l) => l['n'])).toEqual([1, 2]);
    expect(lines(file).map((l) => l['n'])).toEqual([3]);
  });
});
