/**
 * Test support for the operations tools (rq-install, check_rq, rc.rq): run a real file
 * of bin/ as a child process and collect `{exitCode, stdout, stderr}` (corepack's
 * `_runCli`), and a scratch directory per test under os.tmpdir() that is removed when the
 * test passes and kept, with its path printed, when it fails.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, onTestFailed, onTestFinished } from 'vitest';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * Run `bin/<name>` (or any executable path) asynchronously, so a server in the test
 * process keeps answering while it runs. `env` is added to the test's environment;
 * a value of `undefined` removes the variable.
 */
export function runBin(file: string, args: readonly string[], env: Record<string, string | undefined> = {}, cwd: string = REPO): Promise<CliResult> {
  const full = path.isAbsolute(file) ? file : path.join(REPO, file);
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  return new Promise((resolve) => {
    execFile(full, [...args], { env: childEnv, cwd, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error && typeof error.code === 'number' ? error.code : error ? -1 : 0;
      resolve({ exitCode: code, stdout, stderr });
    });
  });
}

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
