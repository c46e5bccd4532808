/**
 * The files of a running message besides its `msg` and `status`: `pid` (written by the
 * spawner as the worker starts, read to find a worker that outlived a restart and by
 * `destroy_message`, removed with the move out of `run`) and `job/`, the worker's working
 * directory (its `stdio.log`).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { QueueLayout } from './layout.js';

/** The running-message files of one queue's message store. */
export interface RunFiles {
  /** Where the spawner writes the worker's pid. */
  pidFile(id: string): string;
  /** The worker's pid and when the pid file was written (epoch ms), or undefined when there is none (or it is not a pid). */
  readPid(id: string): { pid: number; pidFileMs: number } | undefined;
  removePid(id: string): void;
  /** Make the run's `job/` directory; returns its path. */
  makeJobDir(id: string): string;
}

export function createRunFiles(q: QueueLayout): RunFiles {
  const pidFile = (id: string): string => path.join(q.msgDir('run', id), 'pid');
  return {
    pidFile,
    readPid(id) {
      let fd: number | undefined;
      try {
        fd = fs.openSync(pidFile(id), 'r');
        const pidFileMs = fs.fstatSync(fd).mtimeMs;
        const pid = Number(fs.readFileSync(fd, 'utf8'));
        if (Number.isInteger(pid) && pid > 0) return { pid, pidFileMs };
      } catch {
        // no pid file: the worker never started or is gone
      } finally {
        if (fd !== undefined) fs.closeSync(fd);
      }
      return undefined;
    },
    removePid(id) {
      fs.rmSync(pidFile(id), { force: true });
    },
    makeJobDir(id) {
      const jobDir = path.join(q.msgDir('run', id), 'job');
      fs.mkdirSync(jobDir, { recursive: true });
      return jobDir;
    },
  };
}
