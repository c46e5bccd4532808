/**
 * No orphans: a child of rq-mgr (a queue or web process) or of a queue process (a
 * spawner) exits when its parent is gone, whenever that happens, even while the child is
 * still loading its modules; and, with rq-mgr killed at random instants while it
 * restarts a child, no queue ever has two processes serving it.
 *
 * The processes are watched from /proc: each rq process of the root (by its cwd), its
 * parent, and, for a queue, the processes listening on its socket (/proc/net/unix and
 * each process's open sockets), which is what a client reaches.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, childrenOf, pidAlive, rootProcesses, useTestRoot, waitFor, type RqKind, type RqProcess, type TestRoot } from '../helpers/install.js';

/** Preloaded into rq's processes: those named in RQ_TEST_SLOW_START wait before their modules load. */
const SLOW_START = `--import ${path.join(REPO, 'test/fixtures/slow-start.mjs')}`;

const root = useTestRoot();

/** rq-mgr as `bin/rq-mgr start` runs it (its log in log/rq.log), as a child of the test, so the test can kill it. */
function startMgr(t: TestRoot, env: NodeJS.ProcessEnv = {}): ChildProcess {
  return t.spawnEntry('dist/src/supervisor/rq-mgr-main.js', [], { RQ_RESTART_BACKOFF_MS: '5', ...env }).child;
}

async function kill9(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await gone;
}

/** A child of `parent` of this kind (other than `not`), once there is one. */
async function childOf(t: TestRoot, parent: number, kind: RqKind, not?: number): Promise<number> {
  let found: number | undefined;
  await waitFor(
    () => {
      const children = new Set(childrenOf(parent));
      found = rootProcesses(t.root).find((p) => children.has(p.pid) && p.kind === kind && p.pid !== not)?.pid;
      return found !== undefined;
    },
    15_000,
    `a ${kind} process under pid ${parent}`,
  );
  return found!;
}

/** rq processes of the root that have lost their parent: a queue, host or web process whose parent is not an rq-mgr, a spawner whose parent is not a queue or host process. */
function orphans(procs: readonly RqProcess[]): RqProcess[] {
  const kindOf = new Map(procs.map((p) => [p.pid, p.kind]));
  const parentKinds: Partial<Record<RqKind, RqKind[]>> = { queue: ['rq-mgr'], host: ['rq-mgr'], web: ['rq-mgr'], spawner: ['queue', 'host'] };
  return procs.filter((p) => {
    const parent = kindOf.get(p.ppid);
    return p.kind !== 'rq-mgr' && (parent === undefined || !parentKinds[p.kind]?.includes(parent));
  });
}

/** For each queue, the rq processes listening on its socket `queues/<q>/queue.sock`. */
function queueListeners(t: TestRoot, procs: readonly RqProcess[]): Map<string, number[]> {
  const prefix = path.join(t.root, 'queues') + '/';
  const queueOfInode = new Map<string, string>();
  for (const line of fs.readFileSync('/proc/net/unix', 'utf8').split('\n').slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path; flag 0x10000 is a listening socket.
    const [, , , flags, , , inode, where] = line.trim().split(/\s+/);
    if (!flags || !inode || !where?.startsWith(prefix) || !where.endsWith('/queue.sock') || (Number.parseInt(flags, 16) & 0x10000) === 0) continue;
    queueOfInode.set(inode, where.slice(prefix.length, -'/queue.sock'.length));
  }
  const out = new Map<string, number[]>();
  for (const p of procs) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${p.pid}/fd`);
    } catch {
      continue;
    }
    const queues = new Set<string>();
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${p.pid}/fd/${fd}`));
        const queue = m && queueOfInode.get(m[1]!);
        if (queue !== undefined && queue !== null) queues.add(queue);
      } catch {
        // closed meanwhile
      }
    }
    for (const q of queues) out.set(q, [...(out.get(q) ?? []), p.pid]);
  }
  return out;
}

/** Kill every rq process left in the root, so that none outlives the test. */
function killAll(t: TestRoot): void {
  for (const p of rootProcesses(t.root)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

describe('a child whose parent dies while it starts', () => {
  it('a queue process started a moment before rq-mgr is killed exits', async () => {
    const t = root();
    t.addQueue({ name: 'a', script: 'done.sh' });
    await t.usePort();
    // The queue process waits 1 s before loading its modules; rq-mgr dies meanwhile.
    const mgr = startMgr(t, { NODE_OPTIONS: SLOW_START, RQ_TEST_SLOW_START: 'queue-main' });
    try {
      const queue = await childOf(t, mgr.pid!, 'queue');
      await kill9(mgr);
      await waitFor(() => !pidAlive(queue), 5_000, 'the queue process to exit');
    } finally {
      await kill9(mgr);
      killAll(t);
    }
  });

  it('a spawner started a moment before its queue process is killed exits', async () => {
    const t = root();
    t.addQueue({ name: 'a', script: 'done.sh' });
    // The spawner waits 1 s before loading its modules; its queue process dies meanwhile.
    const queue = await t.start('a', { NODE_OPTIONS: SLOW_START, RQ_TEST_SLOW_START: 'spawner-main' });
    try {
      await t.send('a', {});
      const spawner = await childOf(t, queue.pid!, 'spawner');
      await t.kill9('a');
      await waitFor(() => !pidAlive(spawner), 5_000, 'the spawner to exit');
    } finally {
      killAll(t);
    }
  });
});

describe('rq-mgr killed at random instants while it restarts a child', () => {
  const TRIES = 100;

  it(`${TRIES} tries: no rq process is left without its parent for 2 s, and no queue ever has two processes serving it`, { timeout: 400_000 }, async () => {
    const t = root();
    t.addQueue({ name: 'a', script: 'done.sh' });
    await t.usePort();
    const problems = new Set<string>();
    const orphanSince = new Map<number, number>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const procs = rootProcesses(t.root);
        const now = Date.now();
        const orphaned = new Set(orphans(procs).map((p) => p.pid));
        for (const pid of orphaned) orphanSince.set(pid, orphanSince.get(pid) ?? now);
        for (const [pid, since] of orphanSince) {
          if (!orphaned.has(pid)) orphanSince.delete(pid);
          else if (now - since > 2_000) problems.add(`pid ${pid} has run without its parent for over 2 s: ${JSON.stringify(procs.find((p) => p.pid === pid))}`);
        }
        for (const [queue, pids] of queueListeners(t, procs)) {
          if (pids.length > 1) problems.add(`queue ${queue} served by ${pids.length} processes at once: ${pids.join(', ')}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    try {
      for (let i = 0; i < TRIES && problems.size === 0; i++) {
        const mgr = startMgr(t);
        // Two tries in three restart the queue process, one the web process; rq-mgr dies
        // 0 to 297 ms after the new child was spawned, spread evenly over the tries.
        const kind: RqKind = i % 3 === 2 ? 'web' : 'queue';
        const first = await childOf(t, mgr.pid!, kind);
        process.kill(first, 'SIGKILL');
        await childOf(t, mgr.pid!, kind, first);
        await new Promise((r) => setTimeout(r, ((i * 37) % 100) * 3));
        await kill9(mgr);
      }
      // The last rq-mgr is gone: so is, soon, every process it started (the watch holds each to 2 s).
      await waitFor(() => rootProcesses(t.root).length === 0, 5_000, 'every rq process of the root to exit').catch((e: Error) => {
        problems.add(`${e.message}: ${JSON.stringify(rootProcesses(t.root))}`);
      });
    } finally {
      watching = false;
      await watch;
      killAll(t);
    }
    expect([...problems]).toEqual([]);
  });
});
