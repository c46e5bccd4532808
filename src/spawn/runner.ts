/**
 * Spawning a queue script for one message (spec/rq.md §3.1, §3.2) and watching it.
 *
 * The command is `exec_prefix` (default `bash -lc`, `""` for none) plus the script's real
 * path, run the way Ruby's `exec(string)` runs a string: through `/bin/sh -c` when it has
 * shell metacharacters, else split on blanks. The child gets cwd `job/`, stdin from
 * /dev/null, stdout and stderr appended to `job/stdio.log` after RQ's start marker, fd 3
 * (worker → rq) and fd 4 (rq → worker) as blocking socket ends, nice 19, and its own
 * process group (`detached`), so a timeout can signal the whole tree.
 *
 * Beyond RQ, the run's other facts go to `stdio.log` as lines in the start marker's
 * format (lib/log-markers.ts), for the message page's timeline: each status-pipe line as
 * `<pid> - <time> - RQ STATUS - <line>` when it is read, and the end as `<pid> - <time> -
 * RQ EXIT - <code <n>|signal <SIG>> - ran <ms> ms`, written before the exit is reported,
 * so the log holds it before the message leaves run. One write per read of the status
 * pipe and one at the exit, on an fd held open for the run: no file, no fsync. A marker
 * never splits a line of the script's: while its output ends in an unfinished line the
 * markers wait, and at the exit they go after a newline. A write that fails (a full
 * disk) is left out.
 *
 * A worker that writes garbage, never exits or dies by a signal only ever reaches the
 * queue process as lines and an exit event; writes to fd 4 after it has gone (EPIPE)
 * are ignored.
 *
 * A run whose start cannot be written down does not run: on a full disk (ENOSPC) the
 * spawn is refused, before any fork when the job directory's filesystem has no block
 * left, else, when the start marker cannot be written, by a SIGKILL to the new process
 * group at once. Either way the error is thrown, and the queue process puts the message
 * back in que.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { markerLine } from '../lib/log-markers.js';
import { createLineSplitter } from './pipe-protocol.js';

const SHELL_META = /[*?{}[\]<>()~&|\\$;'"`\n#]/;

/** Argv for `"<prefix> <realScript>"` as Ruby's `exec(string)` would run it. */
export function commandArgv(execPrefix: string | null, realScript: string): string[] {
  const command = `${execPrefix ?? 'bash -lc'} ${realScript}`.trim();
  if (SHELL_META.test(command) || /^[A-Za-z_][A-Za-z0-9_]*=/.test(command)) return ['/bin/sh', '-c', command];
  return command.split(/[ \t]+/);
}

/** The script's real path (relative to the root, symlinks followed), or the string as given. */
export function resolveScript(root: string, script: string): string {
  try {
    return fs.realpathSync(path.resolve(root, script));
  } catch {
    return script;
  }
}

export function isRunnable(realScript: string): boolean {
  try {
    fs.accessSync(realScript, fs.constants.X_OK);
    return fs.statSync(realScript).isFile();
  } catch {
    return false;
  }
}


let bootTimeMs: number | undefined;

/**
 * When a live process started, in epoch ms (from `/proc/<pid>/stat` field 22 and the boot
 * time), or undefined when there is no such process. A zombie (exited, not yet reaped)
 * counts as gone. Precise to about a second, because the kernel gives the boot time in
 * whole seconds.
 */
function processStartMs(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    bootTimeMs ??= Number(/^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'))?.[1]) * 1000;
    return bootTimeMs + Number(fields[19]) * 10;
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is still the worker whose pid file was written at `pidFileMs`: alive, and
 * started just before the file was written (a later process that reused the pid started
 * after it). The window allows for the boot time's one-second precision.
 */
export function isSameWorker(pid: number, pidFileMs: number): boolean {
  const started = processStartMs(pid);
  return started !== undefined && started <= pidFileMs + 100 && started >= pidFileMs - 3_000;
}

/** Signal a worker's process group, or the process alone if it has no group of its own. */
export function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

export interface SpawnSpec {
  argv: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  realScript: string;
  onLine(line: string): void;
  /** Called once, after the process has exited and its status pipe has drained. */
  onExit(code: number | null, signal: NodeJS.Signals | null): void;
}

export interface RunningWorker {
  pid: number;
  /** Answer a request (`dup`) on fd 4. Ignored once the worker has gone. */
  reply(line: string): void;
  /** Signal the worker's whole process group. */
  kill(signal: NodeJS.Signals): void;
}

/** A worker started here, whose status pipe its reader can hold back. */
export interface SpawnedWorker extends RunningWorker {
  /**
   * Stop or go on reading the status pipe: a worker writing faster than its lines can be
   * passed on then blocks on its own writes, as with any full pipe. Once the worker has
   * exited, Node reads its pipes again whatever was asked (child_process flushStdio), so
   * the drain after an exit, and its grace, are as before.
   */
  holdLines(hold: boolean): void;
}

/** Stop a worker that must not run after all (it has only just been started): SIGKILL to its group, its pipes closed. */
function abandon(child: ChildProcess): void {
  child.on('error', () => {});
  if (child.pid !== undefined) killGroup(child.pid, 'SIGKILL');
  for (const stream of child.stdio) stream?.destroy();
}

/** Whether the log ends a line (or is empty): a marker written now splits none of the script's. */
function atLineStart(logFd: number): boolean {
  const { size } = fs.fstatSync(logFd);
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  return fs.readSync(logFd, last, 0, 1, size - 1) === 1 && last[0] === 0x0a;
}

/**
 * Append markers the run can do without (the timeline's). While the script's last line is
 * unfinished they wait (false), unless `last`: then they go after a newline. A failed
 * write (a full disk) leaves them out.
 */
function note(logFd: number, lines: string, last: boolean): boolean {
  try {
    if (atLineStart(logFd)) fs.writeSync(logFd, lines);
    else if (last) fs.writeSync(logFd, `\n${lines}`);
    else return false;
  } catch {
    // ENOSPC and the like: the timeline lacks these lines, the run goes on
  }
  return true;
}

/** How long after exit to wait for a status pipe a grandchild still holds open. */
const DRAIN_GRACE_MS = 100;

/** Spawn the worker; throws when the OS refuses (e.g. ENOEXEC, ENOENT), or the disk is full (ENOSPC; see above). */
export function spawnWorker(spec: SpawnSpec): SpawnedWorker {
  const logDir = path.dirname(spec.logFile);
  if (fs.statfsSync(logDir).bavail === 0) throw Object.assign(new Error(`ENOSPC: no space left on device, statfs '${logDir}'`), { code: 'ENOSPC' });
  const logFd = fs.openSync(spec.logFile, 'a+'); // read too: a marker waits for the script's line to end (note)
  const spawnedAt = performance.now();
  let child: ChildProcess;
  try {
    child = spawn(spec.argv[0]!, spec.argv.slice(1), {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['ignore', logFd, logFd, 'pipe', 'pipe'],
      detached: true,
    });
    if (child.pid === undefined) {
      // The spawn failed in libuv; Node also reports it later as an 'error' event.
      child.on('error', () => {});
      throw new Error(`cannot spawn ${spec.argv.join(' ')}`);
    }
    // RQ's forked child wrote this marker before exec. Node cannot run code in the child,
    // so it is appended as soon as the pid is known; a script that prints at once on a
    // busy machine may get its first bytes in before it.
    try {
      fs.writeSync(logFd, `\n${markerLine(child.pid, 'START', spec.realScript)}`);
    } catch (e) {
      abandon(child);
      throw e;
    }
  } catch (e) {
    fs.closeSync(logFd);
    throw e;
  }
  const pid = child.pid;
  try {
    os.setPriority(pid, 19);
  } catch {
    // the worker may already have exited
  }
  const statusPipe = child.stdio[3] as Readable;
  const replyPipe = child.stdio[4] as Writable;
  // The STATUS markers of one read of the pipe go out in one write, once the script's
  // output is at a line start (each keeps the time its line was read).
  let notes = '';
  const flushNotes = (last = false): void => {
    if (notes !== '' && note(logFd, notes, last)) notes = '';
  };
  const lines = createLineSplitter((line) => {
    notes += markerLine(pid, 'STATUS', line);
    spec.onLine(line);
  });
  let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let drained = false;
  let finished = false;
  const finish = (): void => {
    if (finished || !exited) return;
    finished = true;
    lines.end();
    statusPipe.destroy();
    replyPipe.destroy();
    const how = exited.signal === null ? `code ${exited.code ?? 'none'}` : `signal ${exited.signal}`;
    notes += markerLine(pid, 'EXIT', `${how} - ran ${Math.round(performance.now() - spawnedAt)} ms`);
    flushNotes(true);
    fs.close(logFd, () => {});
    spec.onExit(exited.code, exited.signal);
  };
  statusPipe.on('data', (chunk: Buffer) => {
    lines.push(chunk);
    flushNotes();
  });
  statusPipe.on('end', () => {
    drained = true;
    finish();
  });
  statusPipe.on('error', () => {
    drained = true;
    finish();
  });
  replyPipe.on('error', () => {
    // EPIPE: the worker is gone or closed fd 4; its answer no longer matters
  });
  child.on('error', () => {
    // reported through 'exit'
  });
  child.on('exit', (code, signal) => {
    exited = { code, signal };
    if (drained) finish();
    // The grace ends only after the loop has read what is already in the pipe: a timer
    // runs before the loop polls for I/O, so after a long synchronous step the grace
    // would otherwise end with a report unread.
    else setTimeout(() => setImmediate(finish), DRAIN_GRACE_MS).unref();
  });
  return {
    pid,
    reply(line) {
      if (!replyPipe.destroyed && replyPipe.writable) replyPipe.write(`${line}\n`);
    },
    kill: (signal) => killGroup(pid, signal),
    holdLines(hold) {
      if (finished) return;
      if (hold) statusPipe.pause();
      else statusPipe.resume();
    },
  };
}
