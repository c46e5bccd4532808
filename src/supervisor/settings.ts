/**
 * What rq-mgr needs from `config/config.json` before it starts anything:
 * the file must exist and be JSON, and `tmpdir` (when set) must be a directory rq can
 * create files in. The failures carry RQ's exact messages, with the cause on the next
 * line. `bin/rq-mgr start|run` (to say why before starting) and the supervisor process
 * use this; `bin/rq-install` uses the one tmpdir check too.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RqError, coerceError, errnoCode } from '../domain/errors.js';
import type { MainConfig } from '../domain/main-config.js';
import { readMainConfig } from '../store/config-files.js';
import type { RootLayout } from '../store/layout.js';

export interface SupervisorSettings {
  config: MainConfig;
  /** The environment every child inherits: RQ_ENV and TMPDIR from the config. */
  env: NodeJS.ProcessEnv;
}

/**
 * The directory a `tmpdir` setting names, and why it cannot hold upload temp files, if it
 * cannot. Decided here once for rq-install and rq-mgr: a leading `~` is the home directory
 * (RQ expanded the path), a relative path is taken from `base`, and the directory must
 * let this user create files in it (write and search permission, W_OK|X_OK).
 */
export function checkTmpdir(setting: string, base: string): { dir: string; problem: string | undefined } {
  const dir = path.resolve(base, setting.replace(/^~(?=$|\/)/, os.homedir()));
  let st: fs.Stats;
  try {
    st = fs.statSync(dir);
  } catch (e) {
    const code = errnoCode(e);
    return { dir, problem: code === 'ENOENT' || code === 'ENOTDIR' ? 'no such directory' : coerceError(e).message };
  }
  if (!st.isDirectory()) return { dir, problem: 'not a directory' };
  try {
    fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK);
  } catch {
    return { dir, problem: 'not writable' };
  }
  return { dir, problem: undefined };
}

export function loadSupervisorSettings(root: RootLayout): SupervisorSettings {
  let config: MainConfig;
  try {
    config = readMainConfig(root);
  } catch (cause) {
    throw new RqError('RQ_CONFIG', 'Bad config file. Exiting', { cause });
  }
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (config.env !== undefined) env['RQ_ENV'] = config.env;
  if (config.tmpdir !== undefined) {
    const { dir, problem } = checkTmpdir(config.tmpdir, root.root);
    if (problem) {
      throw new RqError('RQ_CONFIG', `Bad 'tmpdir' in config json [${config.tmpdir}]. Exiting`, {
        cause: new RqError('RQ_CONFIG', `${dir}: ${problem}`),
      });
    }
    env['TMPDIR'] = dir;
  }
  return { config, env };
}
