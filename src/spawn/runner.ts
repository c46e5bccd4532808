/**
 * Spawning a queue script for one message (docs/scripts.md: its environment
 * and pipes) and watching it.
 *
 * The command is `exec_prefix` (default `bash -lc`, `""` for none) plus the script's real
 * path, run the way Ruby's `exec(string)` runs a string: through `/bin/sh -c` when it has
 * shell metacharacters, else split on blanks. The child gets cwd `job/`, stdin from
 * /dev/null, stdout and stderr appended to `job/stdio.log` after RQ's start marker, fd 3
 * (worker → rq) and fd 4 (rq → worker) as blocking socket ends, nice 19, and its own
 * process group (`detached`), so a timeout can signal the whole tree.
 *
 * Each run's section of `stdio.log` starts with its start marker, on a line of its own
 * (after a newline only when the log so far does not end with one). RQ's forked child
 * wrote it before its exec; Node runs no code in a child, so the command is started
 * through `/bin/sh`, which waits on fd 5 until the marker is written and then execs it
 * (same pid, fd 5 closed): the script cannot write before its marker. A command that
 * could not be executed (not found, not executable, its `#!` interpreter missing) is
 * spawned directly, so its failure is reported by the spawn as before.
 *
 * Beyond RQ, the run's facts go to a file of their own beside `stdio.log`, `job/timeline.log`
 * (lib/log-markers.ts), for the message page's timeline: the start marker again, each
 * status-pipe line as `<pid> - <time> - RQ STATUS - <line>` when it is read, and the end as
 * `<pid> - <time> - RQ EXIT - <code <n>|signal <SIG>> - ran <ms> ms`, written before the
 * exit is reported, so the file holds it before the message leaves run. One write per read
 * of the status pipe and one at the exit, on an fd held open for the run: no fsync. A
 * write that fails (a full disk) is left out. `stdio.log` has only the start marker and the script's output.
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
import { markerLine, TIMELINE_LOG } from '../lib/log-markers.js';
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

/**
 * A run's `timeline.log`, held open for the run: `note` appends marker lines, `close` ends
 * it. What the disk refuses (the open, a write: a full disk) is left out of the timeline,
 * and the run goes on.
 */
function openTimeline(file: string): { note(lines: string): void; close(): void } {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'a');
  } catch {
    // the timeline lacks this run
  }
  return {
    note(lines) {
      try {
        if (fd !== undefined) fs.writeSync(fd, lines);
      } catch {
        // ENOSPC and the like: the timeline lacks these lines
      }
    },
    close() {
      if (fd !== undefined) fs.close(fd, () => {});
      fd = undefined;
    },
  };
}

/** The fd on which the gate's shell waits (until it is closed) before it execs the command. */
const GATE_FD = 5;
const GATE = `read _ <&${GATE_FD}; exec ${GATE_FD}<&-; exec "$@"`;

/** Whether a log (empty, or ending with a newline) lets a line start now. */
function endsLine(logFd: number, logFile: string): boolean {
  const size = fs.fstatSync(logFd).size;
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  const fd = fs.openSync(logFile, 'r');
  try {
    fs.readSync(fd, last, 0, 1, size - 1);
  } finally {
    fs.closeSync(fd);
  }
  return last[0] === 0x0a;
}

/**
 * Whether `command` would be executed: found (on `PATH` when it has no `/`), an
 * executable file, and its `#!` interpreter (if any) an executable file too.
 */
function canExec(command: string, cwd: string, pathVar: string | undefined): boolean {
  const candidates = command.includes('/') ? [path.resolve(cwd, command)] : (pathVar ?? '/usr/bin:/bin').split(':').map((dir) => path.resolve(cwd, dir, command));
  const file = candidates.find(isRunnable);
  if (file === undefined) return false;
  const head = Buffer.alloc(256);
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const text = head.subarray(0, fs.readSync(fd, head, 0, head.length, 0)).toString('latin1');
    if (!text.startsWith('#!')) return true;
    const interpreter = text.slice(2).split('\n')[0]!.trim().split(/[ \t]/)[0]!;
    return isRunnable(interpreter);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** How long after exit to wait for a status pipe a grandchild still holds open. */
const DRAIN_GRACE_MS = 100;

/** Spawn the worker; throws when the OS refuses (e.g. ENOEXEC, ENOENT), or the disk is full (ENOSPC; see above). */
export function spawnWorker(spec: SpawnSpec): SpawnedWorker {
  const logDir = path.dirname(spec.logFile);
  if (fs.statfsSync(logDir).bavail === 0) throw Object.assign(new Error(`ENOSPC: no space left on device, statfs '${logDir}'`), { code: 'ENOSPC' });
  const logFd = fs.openSync(spec.logFile, 'a');
  const timeline = openTimeline(path.join(logDir, TIMELINE_LOG));
  const spawnedAt = performance.now();
  let child: ChildProcess;
  try {
    const gated = canExec(spec.argv[0]!, spec.cwd, spec.env['PATH']);
    const [command, ...args] = gated ? ['/bin/sh', '-c', GATE, 'sh', ...spec.argv] : spec.argv;
    child = spawn(command!, args, {
      cwd: spec.cwd,
      env: spec.env,
      stdio: ['ignore', logFd, logFd, 'pipe', 'pipe', gated ? 'pipe' : 'ignore'],
      detached: true,
    });
    if (child.pid === undefined) {
      // The spawn failed in libuv; Node also reports it later as an 'error' event.
      child.on('error', () => {});
      throw new Error(`cannot spawn ${spec.argv.join(' ')}`);
    }
    const started = markerLine(child.pid, 'START', spec.realScript);
    try {
      fs.writeSync(logFd, `${endsLine(logFd, spec.logFile) ? '' : '\n'}${started}`);
    } catch (e) {
      abandon(child);
      throw e;
    }
    // The gate opens: the command runs.
    (child.stdio as ReadonlyArray<{ destroy(): void } | null | undefined>)[GATE_FD]?.destroy();
    timeline.note(started);
  } catch (e) {
    timeline.close();
    throw e;
  } finally {
    fs.closeSync(logFd);
  }
  const pid = child.pid;
  try {
    os.setPriority(pid, 19);
  } catch {
    // the worker may already have exited
  }
  const statusPipe = child.stdio[3] as Readable;
  const replyPipe = child.stdio[4] as Writable;
  // The STATUS markers of one read of the pipe go out in one write.
  let notes = '';
  const flushNotes = (): void => {
    if (notes === '') return;
    timeline.note(notes);
    notes = '';
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
    flushNotes();
    timeline.close();
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
