/**
 * Reading the install's configuration files, once for every process: the main
 * `config/config.json`, and a queue config named by a client (`create_queue_link`),
 * which must be a regular file inside the install root of at most 1 MiB, opened without
 * blocking so a FIFO cannot hang the reader.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isInsideDir } from '../domain/create-policy.js';
import { RqError } from '../domain/errors.js';
import { parseMainConfig, type MainConfig } from '../domain/main-config.js';
import type { RootLayout } from './layout.js';

const MAX_LINKED_CONFIG = 1024 * 1024;

/** `config/config.json`, parsed; RQ_CONFIG `Bad config file` (with the cause) otherwise. */
export function readMainConfig(root: RootLayout): MainConfig {
  let text: string;
  try {
    text = fs.readFileSync(root.mainConfig, 'utf8');
  } catch (cause) {
    throw new RqError('RQ_CONFIG', 'Bad config file', { cause });
  }
  return parseMainConfig(text);
}

/**
 * A queue config file a client names, relative to the root: its real path (symlinks
 * followed, once) and its text. The real path is inside the root and is a regular file of
 * at most 1 MiB, and it is the file that was read, so a caller that links to it links
 * what it read. RQ_CONFIG says which rule it broke.
 */
export async function readLinkedConfig(root: string, relPath: string): Promise<{ file: string; text: string }> {
  let file: string;
  let fh: fs.promises.FileHandle;
  try {
    file = await fs.promises.realpath(path.resolve(root, relPath));
    if (!isInsideDir(await fs.promises.realpath(root), file)) throw new RqError('RQ_CONFIG', `${relPath} is not inside the install root`);
    fh = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch (cause) {
    if (cause instanceof RqError) throw cause;
    throw new RqError('RQ_CONFIG', `cannot open ${relPath}`, { cause });
  }
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > MAX_LINKED_CONFIG) throw new RqError('RQ_CONFIG', `${relPath} is not a regular file of at most 1 MiB`);
    return { file, text: await fh.readFile('utf8') };
  } finally {
    await fh.close();
  }
}
