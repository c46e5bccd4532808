/**
 * File-system hints for a queue process: inotify (`fs.watch`) on each queue's `que/`, and
 * one on `config/` for the process.
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
import { coerceError } from '../domain/errors.js';
import type { Logger } from '../lib/logger.js';

const BATCH_MS = 200;

export interface QueHints {
  /** Names that changed in `que/`. */
  queNames(names: Set<string>): void;
  /** Events were lost: look at every entry of `que/`. */
  queOverflow(): void;
}

/** A watch that can be stopped (a hosted queue put away stops its own). */
export interface Watch {
  close(): void;
}

/**
 * Why a watch could not be made, in words an operator can act on: the kernel's inotify
 * limits are per user (`fs.inotify.max_user_instances`, one per process that watches, 128
 * by default; `fs.inotify.max_user_watches`, one per watched directory).
 */
function watchRefusal(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EMFILE') return 'the inotify instances of this user are used up (sysctl fs.inotify.max_user_instances)';
  if (code === 'ENOSPC') return 'the inotify watches of this user are used up (sysctl fs.inotify.max_user_watches)';
  return coerceError(e).message;
}

/** Watch `dir` for `onEvent`; a watch that cannot be made or fails is logged with its reason (watchRefusal). */
function watchDir(dir: string, onEvent: (name: string | null) => void, log: Logger, without: string): Watch {
  const onError = (e: unknown): void => log.warn({ dir, err: watchRefusal(e) }, `cannot watch ${dir}; ${without}`);
  try {
    const w = fs.watch(dir, { persistent: false }, (_event, name) => onEvent(name));
    w.on('error', onError);
    return w;
  } catch (e) {
    onError(e);
    return { close: () => undefined };
  }
}

/** Hints on `que/`, collected and handed over every BATCH_MS. */
export function watchQue(queDir: string, h: QueHints, log: Logger): Watch {
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
  const w = watchDir(
    queDir,
    (name) => {
      if (name === null) overflow = true;
      else if (!name.startsWith('_') && !name.startsWith('.')) pending.add(name);
      timer ??= setTimeout(flush, BATCH_MS);
    },
    log,
    'messages put into que/ by hand are seen at the next start',
  );
  return {
    close: () => {
      clearTimeout(timer);
      w.close();
    },
  };
}

/**
 * Hints on the config directory, where the admin flag files are: `onFlag` gets the name
 * of each file that appeared or vanished (null when events were lost). One watch serves
 * every queue of the process.
 */
export function watchFlags(configDir: string, onFlag: (name: string | null) => void, log: Logger): Watch {
  return watchDir(configDir, onFlag, log, 'the 1 s tick still re-reads the flags');
}
