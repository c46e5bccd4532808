/**
 * Where the install root is: `RQ_ROOT` when set, else the parent of the directory the
 * running entry file lives in two levels up (`<root>/bin/x` or `<root>/dist/src/<part>/x.js`).
 * Every command works from any cwd this way, as RQ's did. Also where the built entry
 * files of rq's three kinds of process are, named once for rq-mgr, its CLI and the bench,
 * and rq's own version (its package.json's).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root this file was built into (`<root>/dist/src/lib/install-root.js`). */
export const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The built entry files: rq-mgr as a daemon, a queue process, the web process. */
export const MGR_MAIN = path.join(PACKAGE_ROOT, 'dist/src/supervisor/rq-mgr-main.js');
export const QUEUE_MAIN = path.join(PACKAGE_ROOT, 'dist/src/queue/queue-main.js');
export const HOST_MAIN = path.join(PACKAGE_ROOT, 'dist/src/queue/host-main.js');
export const WEB_MAIN = path.join(PACKAGE_ROOT, 'dist/src/web/web-main.js');

/**
 * Node flags of a queue process and of its spawners. V8 grows the young generation to
 * 16 MB semi-spaces while a big que index is read at start-up and keeps it; 1 MB keeps a
 * queue with 100,000 waiting messages about 25 MB smaller, with no change in throughput
 * we could measure (`npm run bench`, figures 1 and 4). A spawner stays at about 20 MB of
 * its own memory instead of 30, and every fork copies what it holds.
 */
export const QUEUE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];
/**
 * Node flags of rq-mgr (when `bin/rq-mgr start` starts it) and of the web process: the
 * same young generation. Under load (2,000 queues made through a front door at once)
 * each otherwise kept 30 to 45 MB more than at rest (`npm run bench`, figure 8).
 */
export const SERVICE_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1'];

/** rq's own version, from its package.json (`unknown` when that cannot be read). */
export function packageVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export function installRoot(): string {
  return path.resolve(process.env['RQ_ROOT'] ?? PACKAGE_ROOT);
}
