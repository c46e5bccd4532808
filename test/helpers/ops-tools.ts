/**
 * Test support for the operations tools (rq-install, check_rq, rc.rq): the shared
 * `runBin`, and a scratch directory per test under os.tmpdir() that is removed when the
 * test passes and kept, with its path printed, when it fails.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, onTestFailed, onTestFinished } from 'vitest';

export { REPO, runBin, type CliResult } from './run-bin.js';

/** A fresh directory under os.tmpdir() for each test of the calling file. */
export function useScratchDir(prefix: string): () => string {
  let current: string | undefined;
  beforeEach(() => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    current = dir;
    // onTestFinished runs after the afterEach hooks, once the result is known.
    onTestFinished((ctx) => {
      if (ctx.task.result?.state === 'pass') fs.rmSync(dir, { recursive: true, force: true });
    });
    onTestFailed(() => {
      console.error(`--- scratch directory kept at ${dir} ---`);
    });
  });
  afterEach(() => {
    current = undefined;
  });
  return () => {
    if (!current) throw new Error('useScratchDir: no test is running');
    return current;
  };
}
