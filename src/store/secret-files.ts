/**
 * The files that hold passwords and tokens (`config/config.json`: `basic_auth`, the front
 * doors' tokens and passwords; `config/lmstfy_tokens.json`: minted lmstfy tokens;
 * `config/lmstfy_limits.json`: the tokens' rate limiters, which name them) are
 * owner-only. Their writers create them with SECRET_FILE_MODE (atomic.ts), and rq-mgr
 * makes existing ones owner-only at start (an install made by an older version wrote
 * them readable by every local user).
 */
import fs from 'node:fs';
import { coerceError } from '../domain/errors.js';
import { statOrUndefinedSync } from './if-present.js';

/** Read and write for the owner, nothing for anyone else. */
export const SECRET_FILE_MODE = 0o600;

/** What tightenSecretFiles did to one file: its old and new permission bits, or why it could not. */
export type Tightened = { file: string; from: number; to: number } | { file: string; error: string };

/** Take the group and other bits off each file of `files` that has any; a file that is not there is skipped. */
export function tightenSecretFiles(files: readonly string[]): Tightened[] {
  const out: Tightened[] = [];
  for (const file of files) {
    try {
      const st = statOrUndefinedSync(file);
      if (st === undefined || (st.mode & 0o077) === 0) continue;
      const from = st.mode & 0o777;
      fs.chmodSync(file, from & 0o700);
      out.push({ file, from, to: from & 0o700 });
    } catch (e) {
      out.push({ file, error: coerceError(e).message });
    }
  }
  return out;
}
