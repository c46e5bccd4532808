/**
 * The lmstfy door's access log (`/accesslog`): when it is on, one line per `/api`
 * request through the process logger, at level info: `{"msg":"lmstfy access", method,
 * path, status, duration_ms, remote, namespace, request_id}` (`request_id` is the reply's
 * `X-Request-ID`). The path is the URL's path alone: the
 * query may carry the token (`?token=`), and no line ever holds one. `status` is 499 (as
 * nginx writes it) for a client that went away before its reply.
 *
 * It starts as `access_log` in the lmstfy section says (default off, as in the
 * reference); `POST /accesslog?status=enable|disable` switches it until the web process
 * restarts, which starts it again from the config.
 */
import type http from 'node:http';
import type { Logger } from '../lib/logger.js';

/** The status logged for a request whose client went away before its reply. */
export const CLIENT_GONE = 499;

export class AccessLog {
  private readonly log: Logger;
  /** Whether requests are logged now. */
  enabled: boolean;

  constructor(log: Logger, enabled: boolean) {
    this.log = log;
    this.enabled = enabled;
  }

  /** Log one request, if the log is on. */
  record(req: http.IncomingMessage, res: http.ServerResponse, path: string, namespace: string | undefined, status: number, startedMs: number): void {
    if (!this.enabled) return;
    const durationMs = Math.round((performance.now() - startedMs) * 1000) / 1000;
    const line = { method: req.method, path, status, duration_ms: durationMs, remote: req.socket.remoteAddress, namespace, request_id: res.getHeader('X-Request-ID') };
    this.log.info(line, 'lmstfy access');
  }
}
