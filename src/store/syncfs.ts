/**
 * The checkpoint's sync: syncfs(2) of the filesystem that holds the queues, which writes
 * every dirty file and directory of it at once. Node has no binding for it, so it runs
 * `sync --file-system <dir>` (coreutils). One sync serves every request that came before
 * it started: a request made while a sync runs waits for the next one, shared by all the
 * requests made meanwhile (a host of many queues checkpoints them with few syncs).
 */
import { execFile } from 'node:child_process';

let running: Promise<void> | undefined;
let queued: Promise<void> | undefined;

function runSync(dir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('sync', ['--file-system', dir], (e, _stdout, stderr) => {
      if (e) reject(new Error(`sync --file-system ${dir}: ${stderr.trim() || e.message}`));
      else resolve();
    });
  });
}

/** Make everything written so far under `dir`'s filesystem durable. */
export function syncFilesystem(dir: string): Promise<void> {
  if (running === undefined) {
    running = runSync(dir).finally(() => (running = undefined));
    return running;
  }
  queued ??= running
    .catch(() => undefined)
    .then(() => {
      queued = undefined;
      return syncFilesystem(dir);
    });
  return queued;
}
