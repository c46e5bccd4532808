/**
 * Test support for rq's built-in queues (relay, webhook, cleaner, rq_router): put them
 * into a TestRoot with the real `bin/rq-install`, so a test runs the very configs and
 * libexec scripts an install gets, and give one of them `env_vars` before it starts.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { TestRoot } from './install.js';

/** `rq-install --force` into the root (its config.json is rewritten; nothing else is removed). */
export async function installBuiltins(t: TestRoot): Promise<void> {
  const r = await t.bin('rq-install', ['--force', '--env', 'test', '--tmpdir', path.join(t.root, 'tmp')]);
  if (r.code !== 0) throw new Error(`rq-install failed (${r.code}): ${r.stdout}${r.stderr}`);
}

/** Set a queue's `env_vars` in its config.json (before the queue process starts). */
export function setEnvVars(t: TestRoot, queue: string, envVars: Record<string, string>): void {
  const file = path.join(t.queueDir(queue), 'config.json');
  const config = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(file, JSON.stringify({ ...config, env_vars: envVars }));
}
