/**
 * Filesystem reads for which absence is an answer, not an error: a directory that is not
 * there lists as empty, a path that is not there stats as undefined. "Not there" is
 * ENOENT only: every other error is thrown, never swallowed (a file where a directory
 * should be is ENOTDIR, a broken tree someone must look at). The one copy for the
 * message store, disk usage and rq-install, each read asynchronous (walks that must not
 * block the event loop) and synchronous.
 */
import fs from 'node:fs';
import { errnoCode } from '../domain/errors.js';

function isAbsent(e: unknown): boolean {
  return errnoCode(e) === 'ENOENT';
}

function orIfAbsent<T>(read: () => T, absent: T): T {
  try {
    return read();
  } catch (e) {
    if (isAbsent(e)) return absent;
    throw e;
  }
}

async function orIfAbsentAsync<T>(read: () => Promise<T>, absent: T): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (isAbsent(e)) return absent;
    throw e;
  }
}

/** The names in `dir`, or none when it is not there. */
export const readdirOrEmpty = (dir: string): Promise<string[]> => orIfAbsentAsync(() => fs.promises.readdir(dir), []);

/** `readdirOrEmpty`, synchronous. */
export const readdirOrEmptySync = (dir: string): string[] => orIfAbsent(() => fs.readdirSync(dir), []);

/** The lstat of `p`, or undefined when it is not there. */
export const lstatOrUndefined = (p: string): Promise<fs.Stats | undefined> => orIfAbsentAsync<fs.Stats | undefined>(() => fs.promises.lstat(p), undefined);

/** `lstatOrUndefined`, synchronous. */
export const lstatOrUndefinedSync = (p: string): fs.Stats | undefined => orIfAbsent<fs.Stats | undefined>(() => fs.lstatSync(p), undefined);

/** The stat of `p` (symlinks followed), or undefined when it is not there. */
export const statOrUndefinedSync = (p: string): fs.Stats | undefined => orIfAbsent<fs.Stats | undefined>(() => fs.statSync(p), undefined);
