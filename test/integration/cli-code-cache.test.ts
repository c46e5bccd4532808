/**
 * `bin/rq` loads the bundled CLI with the V8 code cache the build wrote beside it. A cache
 * that does not fit this Node (Node upgraded after the build, a cache from another build)
 * or that is missing must not matter: the call compiles the bundle and does the same.
 * Each case runs a copy of the built bin/rq.cjs and bundle in a package directory of its
 * own, against a real queue process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runRq } from '../helpers/cli.js';
import { REPO, useTestRoot } from '../helpers/install.js';

const root = useTestRoot();
const packages: string[] = [];
afterEach(() => {
  for (const dir of packages.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A package directory with the built `bin/rq` (its symlink and file) and bundle, and `cache` as the code cache (none: undefined). */
function packageWith(cache: Buffer | undefined): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-package-'));
  packages.push(dir);
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.mkdirSync(path.join(dir, 'dist/src/cli'), { recursive: true });
  fs.copyFileSync(path.join(REPO, 'bin/rq.cjs'), path.join(dir, 'bin/rq.cjs'));
  fs.chmodSync(path.join(dir, 'bin/rq.cjs'), 0o755);
  fs.symlinkSync('rq.cjs', path.join(dir, 'bin/rq'));
  fs.copyFileSync(path.join(REPO, 'dist/src/cli/rq.cjs'), path.join(dir, 'dist/src/cli/rq.cjs'));
  if (cache !== undefined) fs.writeFileSync(path.join(dir, 'dist/src/cli/rq.cjs.cache'), cache);
  return dir;
}

describe('bin/rq and its code cache', () => {
  it.each([
    ['a cache V8 rejects', Buffer.from('not a V8 code cache, or one of another Node')],
    ['no cache', undefined],
  ])('sends a message with %s', async (_, cache) => {
    const t = root();
    t.addQueue({ name: 'q1', script: 'done.sh', num_workers: 1 });
    await t.start('q1');
    const bin = path.join(packageWith(cache), 'bin/rq');
    const sent = await runRq(t.root, ['sendmesg', '--dest', 'q1'], { bin });
    expect(sent).toMatchObject({ code: 0, stderr: '' });
    expect(sent.stdout).toMatch(/^ok http:\/\/127\.0\.0\.1:3333\/q\/q1\/\d{8}\.\d{4}\.\d\d\.\d{3}\.\d+\n$/);
    expect(await runRq(t.root, ['nosuch'], { bin })).toEqual({ code: 1, stdout: '', stderr: 'Command not found: nosuch (cmd_nosuch)\n' });
  });
});
