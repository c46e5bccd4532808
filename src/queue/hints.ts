/**
 * File-system hints for a queue process: inotify (`fs.watch`) on `que/` and `config/`.
 * A hint only says "look at this name": an operator dropped a message directory into
 * `que/` by hand or removed one, or touched `<queue>.pause` / `.down`. The directory
 * listing stays the truth, and the queue's own renames (which inotify reports too) are
 * recognised from memory and ignored (que-memory.ts `noticeQueName`).
 *
 * Names are collected and handed over in batches, at most every BATCH_MS, so a burst of
 * thousands of commits costs a Set insertion each. No directory is ever re-listed on a
 * hint (chokidar re-listed and lstat'ed all of `que/` on every change, which at 30,000
 * waiting messages cost more than the commits themselves). If the kernel drops events
 * (the watch overflows and reports no name), one full reconcile of `que/` follows.
 */
import fs from 'node:fs';
import type { Logger } from '../lib/logger.js';

const BATCH_MS = 200;

export interface HintHandlers {
  /** Names that changed in `que/`. */
  queNames(names: Set<string>): void;
  /** Events were lost: look at every entry of `que/`. */
  queOverflow(): void;
  /** A flag file of this queue appeared or vanished. */
  flags(): void;
}

export function watchHints(queDir: string, configDir: string, flagNames: readonly string[], h: HintHandlers, log: Logger): void {
  let pending = new Set<string>();
  let overflow = false;
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    timer = undefined;
    const names = pending;
    pending = new Set();
    if (overflow) {
      overflow = false;
      h.queOverflow();
    } else if (names.size > 0) h.queNames(names);
  };
  const schedule = (): void => {
    timer ??= setTimeout(flush, BATCH_MS);
  };
  const onError = (e: Error): void => log.warn({ err: e.message }, 'file watch failed; the 1 s tick still re-reads the flags');
  const que = fs.watch(queDir, { persistent: false }, (_event, name) => {
    if (name === null) overflow = true;
    else if (!name.startsWith('_') && !name.startsWith('.')) pending.add(name);
    schedule();
  });
  const config = fs.watch(configDir, { persistent: false }, (_event, name) => {
    if (name === null || flagNames.includes(name)) h.flags();
  });
  que.on('error', onError);
  config.on('error', onError);
}
