/**
 * Where the install root is: `RQ_ROOT` when set, else the parent of the directory the
 * running entry file lives in two levels up (`<root>/bin/x` or `<root>/dist/src/<part>/x.js`).
 * Every command works from any cwd this way, as RQ's did.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root this file was built into (`<root>/dist/src/lib/install-root.js`). */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export function installRoot(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env['RQ_ROOT'] ?? PACKAGE_ROOT);
}
