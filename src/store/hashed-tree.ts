/**
 * Listing a state's messages. done and relayed are hashed trees (docs/layout.md):
 * `<day>/<hour>/<minute>/<id>`, walked newest first or oldest first, a directory listed
 * only when the walk reaches it. prep, que, run and err are flat; a name starting with
 * `_` or `.` in them is a temp name, not a message.
 */
import path from 'node:path';
import { readdirOrEmpty, readdirOrEmptySync } from './if-present.js';

/** Messages listed together: their directory and their names (ids). */
export interface MessageGroup {
  dir: string;
  ids: string[];
}

/** Names at each level of a hashed tree: day, hour, minute, then message ids. */
const LEVEL_RE = [/^\d{8}$/, /^\d\d$/, /^\d\d$/, /^\d\d/];

/** A name in a flat state directory that is a message, not a temp name. */
export function isMessageName(name: string): boolean {
  return !name.startsWith('_') && !name.startsWith('.');
}

/** The names of one level of a hashed tree that belong there, in walk order (a minute's ids unsorted). */
function levelNames(names: string[], level: number, newestFirst: boolean): string[] {
  const kept = names.filter((n) => LEVEL_RE[level]!.test(n));
  if (level < 3) kept.sort();
  if (level < 3 && newestFirst) kept.reverse();
  return kept;
}

/** A hashed tree's minute directories with their (unsorted) ids, newest minute first or oldest first. */
function* minuteDirs(dir: string, newestFirst: boolean, level = 0): Generator<MessageGroup> {
  const names = levelNames(readdirOrEmptySync(dir), level, newestFirst);
  if (level === 3) yield { dir, ids: names };
  else for (const name of names) yield* minuteDirs(path.join(dir, name), newestFirst, level + 1);
}

/** `minuteDirs`, each directory listed asynchronously (a clean or a measurement never blocks the event loop). */
async function* minuteDirsAsync(dir: string, newestFirst: boolean, level = 0): AsyncGenerator<MessageGroup> {
  const names = levelNames(await readdirOrEmpty(dir), level, newestFirst);
  if (level === 3) yield { dir, ids: names };
  else for (const name of names) yield* minuteDirsAsync(path.join(dir, name), newestFirst, level + 1);
}

/** The ids of the hashed tree `dir`, newest first, from the `offset`th on (a skipped minute is only counted). */
export function* hashedIds(dir: string, offset = 0): Generator<string> {
  let skip = offset;
  for (const { ids } of minuteDirs(dir, true)) {
    if (skip >= ids.length) {
      skip -= ids.length;
      continue;
    }
    ids.sort().reverse();
    for (let i = skip; i < ids.length; i++) yield ids[i]!;
    skip = 0;
  }
}

/** How many messages the flat state directory `dir` holds (none when it is missing). */
export function countFlat(dir: string): number {
  return readdirOrEmptySync(dir).filter(isMessageName).length;
}

/** How many messages the hashed tree `dir` holds. */
export function countHashed(dir: string): number {
  let n = 0;
  for (const { ids } of minuteDirs(dir, true)) n += ids.length;
  return n;
}

/** The messages of state directory `dir` in groups (see MessageStore `groups`). */
export async function* stateGroups(dir: string, hashed: boolean, order?: 'oldest'): AsyncGenerator<MessageGroup> {
  const sorted = (group: MessageGroup): MessageGroup => (order === 'oldest' ? { dir: group.dir, ids: group.ids.sort() } : group);
  if (!hashed) {
    yield sorted({ dir, ids: (await readdirOrEmpty(dir)).filter(isMessageName) });
    return;
  }
  for await (const group of minuteDirsAsync(dir, order !== 'oldest')) yield sorted(group);
}
