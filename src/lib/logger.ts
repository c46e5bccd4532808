/**
 * The one logger: pino JSON lines at `RQ_LOG_LEVEL` (default info), on stdout unless the
 * caller gives a destination (rq-mgr gives `log/rq.log` when it runs as a daemon). Every
 * process binds `pid`, and queue processes bind `queue`; lines about a message add
 * `msg_id`. A script's own output never goes here; it stays in its `job/stdio.log`.
 */
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

export function createLogger(bindings: Record<string, unknown>, destination: DestinationStream = pino.destination({ dest: 1, sync: false })): Logger {
  return pino({ level: process.env['RQ_LOG_LEVEL'] ?? 'info', base: { pid: process.pid, ...bindings } }, destination);
}
