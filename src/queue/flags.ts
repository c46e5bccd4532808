/**
 * The admin flags of a queue (PAUSE, DOWN): `<queue>.down` and `<queue>.pause` in the
 * config directory. They are re-read by the `status` and `stats` commands, the flag files'
 * watch (hints.ts), the 1 s tick and a worker's exit; the DOWN check of every other command
 * uses the value last read.
 */
import fs from 'node:fs';
import type { QueueLayout } from '../store/layout.js';
import type { AdminStatus, QueueState } from './state.js';

/** What the flag files say: DOWN over PAUSE over UP. */
export function readAdminFlags(layout: QueueLayout): AdminStatus {
  return fs.existsSync(layout.downFlag) ? 'DOWN' : fs.existsSync(layout.pauseFlag) ? 'PAUSE' : 'UP';
}

/** Re-read the admin flag files; dispatch if that un-paused the queue. */
export function refreshFlags(s: QueueState): void {
  const before = s.admin;
  s.admin = readAdminFlags(s.layout);
  if (before !== s.admin) {
    s.log.info({ admin: s.admin }, 'admin status changed');
    if (s.admin === 'UP') {
      setImmediate(() => s.nudge());
      void s.cron.check();
    }
  }
}
