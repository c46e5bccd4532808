/**
 * What rq-mgr needs from `config/config.json` before it starts anything (spec/rq.md §1.2):
 * the file must exist and be JSON, and `tmpdir` (when set) must be a writable directory.
 * The failures carry RQ's exact messages. Both `bin/rq-mgr start` (to say why before
 * daemonising) and the supervisor process use this.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RqError } from '../domain/errors.js';
import { parseMainConfig, type MainConfig } from '../domain/main-config.js';
import type { RootLayout } from '../store/layout.js';

export interface SupervisorSettings {
  config: MainConfig;
  /** The environment every child inherits: RQ_ENV and TMPDIR from the config. */
  env: NodeJS.ProcessEnv;
}

export function loadSupervisorSettings(root: RootLayout, base: NodeJS.ProcessEnv = process.env): SupervisorSettings {
  let config: MainConfig;
  try {
    config = parseMainConfig(fs.readFileSync(root.mainConfig, 'utf8'));
  } catch (cause) {
    throw new RqError('RQ_CONFIG', 'Bad config file. Exiting', { cause });
  }
  const env: NodeJS.ProcessEnv = { ...base };
  if (config.env !== undefined) env['RQ_ENV'] = config.env;
  if (config.tmpdir !== undefined) {
    const dir = path.resolve(root.root, config.tmpdir.replace(/^~(?=$|\/)/, os.homedir()));
    try {
      if (!fs.statSync(dir).isDirectory()) throw new Error('not a directory');
      fs.accessSync(dir, fs.constants.W_OK);
    } catch (cause) {
      throw new RqError('RQ_CONFIG', `Bad 'tmpdir' in config json [${config.tmpdir}]. Exiting`, { cause });
    }
    env['TMPDIR'] = dir;
  }
  return { config, env };
}
