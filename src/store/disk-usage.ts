/**
 * The disk a queue's messages take, and giving it back: measuring each state's message
 * directories, and deleting the trees a clean took out of their state (the trash).
 *
 * Bytes are allocated blocks, `st_blocks × 512`, as `du` counts them, not file sizes:
 * that is what fills a disk (a 10-byte `msg` takes a 4 KiB block, and every message
 * has several directories). A state's bytes are its message directories with everything
 * in them, plus the directories that hold them: the state directory and, in done and
 * relayed, the minute directories (their day and hour directories are left out). A file
 * with other hard links (an attachment a clone shares) is counted once per measurement;
 * deleting such a file frees nothing, so it does not count as freed.
 *
 * Everything here is asynchronous, the listing of the states included (the store's
 * `groups` lists each directory asynchronously), and keeps at most WALK_CONCURRENCY
 * filesystem calls in flight, so a walk never blocks the event loop and leaves most of
 * libuv's threads to the fsyncs of the queue's commits. A measurement is a walk, not a
 * snapshot: messages that move while it runs may be counted in either state, or in
 * neither.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { DiskUsage, StateUsage } from '../domain/disk-usage.js';
import { STATES, type State } from '../domain/states.js';
import { lstatOrUndefined, readdirOrEmpty } from './if-present.js';
import type { QueueLayout } from './layout.js';
import type { MessageStore } from './message-store.js';

/** Filesystem calls in flight at once during a walk (libuv has 16 threads in a queue process). */
const WALK_CONCURRENCY = 4;

/** Run `fn` on every item, at most `limit` at a time. */
async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Bytes a tree takes (see above); `seen` holds the files with other hard links already
 * counted by this measurement (or clean). A tree that vanishes during the walk counts what
 * was seen.
 */
export async function treeBytes(p: string, seen: Set<string>): Promise<number> {
  const st = await lstatOrUndefined(p);
  if (st === undefined) return 0;
  if (!st.isDirectory()) {
    if (st.nlink > 1) {
      const key = `${st.dev}:${st.ino}`;
      if (seen.has(key)) return 0;
      seen.add(key);
    }
    return st.blocks * 512;
  }
  let bytes = st.blocks * 512;
  for (const name of await readdirOrEmpty(p)) bytes += await treeBytes(path.join(p, name), seen);
  return bytes;
}

/** Delete a tree, depth first; returns the bytes that freed (files with other links free nothing). */
async function removeTree(p: string): Promise<number> {
  const st = await lstatOrUndefined(p);
  if (st === undefined) return 0;
  if (!st.isDirectory()) {
    await fs.promises.unlink(p);
    return st.nlink > 1 ? 0 : st.blocks * 512;
  }
  let freed = st.blocks * 512;
  for (const name of await readdirOrEmpty(p)) freed += await removeTree(path.join(p, name));
  await fs.promises.rmdir(p);
  return freed;
}

/** Delete everything in the queue's trash; returns the bytes freed. */
export async function emptyTrash(q: QueueLayout): Promise<number> {
  let freed = 0;
  await forEachLimit(await readdirOrEmpty(q.trashDir), WALK_CONCURRENCY, async (name) => {
    const bytes = await removeTree(path.join(q.trashDir, name));
    freed += bytes; // added after the await: `freed += await …` would add to a stale value
  });
  return freed;
}

/** One state's messages and bytes; `seen` is the measurement's set of multiply linked files. */
export async function measureState(q: QueueLayout, store: MessageStore, state: State, seen: Set<string> = new Set()): Promise<StateUsage> {
  const dirBytes = async (dir: string): Promise<number> => ((await lstatOrUndefined(dir))?.blocks ?? 0) * 512;
  const usage: StateUsage = { messages: 0, bytes: await dirBytes(q.stateDir(state)) };
  for await (const group of store.groups(state)) {
    if (group.dir !== q.stateDir(state)) usage.bytes += await dirBytes(group.dir);
    usage.messages += group.ids.length;
    await forEachLimit(group.ids, WALK_CONCURRENCY, async (id) => {
      const bytes = await treeBytes(path.join(group.dir, id), seen);
      usage.bytes += bytes;
    });
  }
  return usage;
}

/** Every state of a queue, one after the other. */
export async function measureQueue(q: QueueLayout, store: MessageStore): Promise<DiskUsage> {
  const startedMs = Date.now();
  const seen = new Set<string>();
  const states = {} as Record<State, StateUsage>;
  let bytes = 0;
  for (const state of STATES) {
    states[state] = await measureState(q, store, state, seen);
    bytes += states[state].bytes;
  }
  const endMs = Date.now();
  return { measured_at: Math.floor(endMs / 1000), took_ms: endMs - startedMs, bytes, states };
}
