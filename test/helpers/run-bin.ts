/**
 * Run a real file of the repository's `bin/` (or any executable) as a child process and
 * hand back what a user sees: `{ code, stdout, stderr }` (corepack's `_runCli`). A
 * non-zero exit is a result, not an exception. Asynchronous, so a server in the test
 * process keeps answering while the command runs.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `file` is relative to the repository (`bin/rq`) or absolute. `env` is added to the
 * test's environment; a value of `undefined` removes that variable.
 */
export function runBin(file: string, args: readonly string[], env: Record<string, string | undefined> = {}, cwd: string = REPO): Promise<CliResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  return new Promise((resolve) => {
    execFile(path.resolve(REPO, file), [...args], { env: childEnv, cwd, timeout: 60_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error && typeof error.code === 'number' ? error.code : error ? -1 : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
