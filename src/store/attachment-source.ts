/**
 * The checks a file must pass before it is attached to a message, with
 * RQ's texts: it exists, is not a directory, is readable, and is a regular file. The queue
 * process runs them on `attach_message`; `bin/rq attachmesg` runs them first, as RQ's
 * CLI did. Light on purpose: the CLI imports it.
 */
import fs from 'node:fs';
import { RqError } from '../domain/errors.js';

export function checkAttachmentSource(pathname: string): void {
  const fail = (text: string): RqError => new RqError('RQ_ATTACH', text);
  let st: fs.Stats;
  try {
    st = fs.statSync(pathname);
  } catch {
    throw fail(`No such file ${pathname} to attach to message`);
  }
  if (st.isDirectory()) throw fail(`Attachment currently cannot be a directory ${pathname}`);
  try {
    fs.accessSync(pathname, fs.constants.R_OK);
  } catch {
    throw fail(`Attachment currently cannot be read: ${pathname}`);
  }
  if (!st.isFile()) throw fail(`Attachment currently not of supported type: ${pathname}`);
}
