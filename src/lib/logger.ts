/**
 * The one logger: pino JSON lines on stdout (rq-mgr points that at `log/` or the
 * terminal). Every process binds `pid`, and queue processes bind `queue`; lines about a
 * message add `msg_id`. A script's own output never goes here; it stays in its
 * `job/stdio.log`.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(bindings: Record<string, unknown>, level = process.env['RQ_LOG_LEVEL'] ?? 'info'): Logger {
  return pino({ level, base: { pid: process.pid, ...bindings } }, pino.destination({ dest: 1, sync: false }));
}
