/**
 * Test support for the command line: run the real `bin/rq` (the built dist/, through its
 * shebang) as a child process against a TestRoot, and hand back what a user would see:
 * the exit status, stdout and stderr. Nothing is mocked; a non-zero exit is a result,
 * not an exception.
 */
import path from 'node:path';
import { REPO, runBin, type CliResult } from './run-bin.js';

export type { CliResult };
export const RQ_BIN = path.join(REPO, 'bin/rq');

export interface RunRqOptions {
  /** The caller's cwd (default: the install root). */
  cwd?: string;
  /** The program to run instead of bin/rq, e.g. a symlink to it. */
  bin?: string;
  /** Extra environment, on top of this process's. */
  env?: Record<string, string>;
}

/** Run `bin/rq <args…>` with RQ_ROOT=<root>. */
export function runRq(root: string, args: readonly string[], opts: RunRqOptions = {}): Promise<CliResult> {
  return runBin(opts.bin ?? RQ_BIN, args, { RQ_ROOT: root, ...opts.env }, opts.cwd ?? root);
}
