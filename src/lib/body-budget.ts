/**
 * The memory that request bodies may take in the web process, all requests together: the
 * web's routes and the pull front doors (Cloudq, lmstfy, RQMS) share one budget of bytes.
 * A request holds the bytes of its body that have arrived, each chunk as it is read (a
 * multipart body less what went to its files), never the length it declares: so a
 * client that declares much and sends little holds little, and to fill the budget one
 * has to send it. It holds them until its response is over: the response's 'close',
 * which comes once the reply has gone and also when the client goes away first, since
 * the parsed body and the queue request made of it live that long. A body whose next
 * chunk does not fit is refused with a 503 and `Retry-After`, each front door in its own
 * words (web/params.ts budgeted and multipart, protocols/http-body.ts readBody); a body
 * over its own front door's limit is a 413 whatever the budget. The web does not inflate
 * compressed bodies (415), so what arrives is what is in memory. The web's `/metrics`
 * shows the budget, what is held, and the refusals.
 *
 * The budget is RQ_WEB_BODY_BUDGET bytes (a positive integer in rq-mgr's environment,
 * which the web process inherits), by default 64 MiB: a body at the web's limit of
 * 64 MiB fits when nothing else is in flight. A body costs the web process several times
 * its size while it is handled (the bytes, their text, the parsed params, the queue
 * request: a 60 MiB form body took about 430 MB), which is why the budget is no larger.
 */
import type http from 'node:http';

export const DEFAULT_BODY_BUDGET = 64 * 1024 * 1024;
/** What a refused client is asked to wait before it tries again, in seconds (`Retry-After`). */
export const BUSY_RETRY_AFTER_S = 5;

export class BodyBudget {
  readonly max: number;
  private used = 0;
  /** Bodies that did not fit, since the process started. */
  private refused = 0;
  /** The bytes held for each response not yet closed. */
  private readonly held = new Map<http.ServerResponse, number>();

  constructor(max: number) {
    this.max = max;
  }

  /** The bytes held now, all requests together. */
  get inUse(): number {
    return this.used;
  }

  /** How many bodies did not fit, since the process started. */
  get refusals(): number {
    return this.refused;
  }

  /**
   * Hold `bytes` more for the request that `res` answers, until `res` closes (or
   * `letGo`). False when they do not fit: nothing more is held then. A response that has
   * already closed holds nothing (its client is gone, and so is its body).
   */
  hold(res: http.ServerResponse, bytes: number): boolean {
    if (res.closed) return true;
    if (this.used + bytes > this.max) {
      this.refused++;
      return false;
    }
    const before = this.held.get(res);
    if (before === undefined) res.once('close', () => this.letGo(res));
    this.held.set(res, (before ?? 0) + bytes);
    this.used += bytes;
    return true;
  }

  /** Give back `bytes` of what `res` holds: they are not in memory any more (a file part went to disk). */
  release(res: http.ServerResponse, bytes: number): void {
    const held = this.held.get(res);
    if (held === undefined) return;
    const given = Math.min(bytes, held);
    this.held.set(res, held - given);
    this.used -= given;
  }

  /** Give back at once what `res` holds: its body is not kept (refused, or cut short). */
  letGo(res: http.ServerResponse): void {
    const bytes = this.held.get(res);
    if (bytes === undefined) return;
    this.held.delete(res);
    this.used -= bytes;
  }

  /** The refusal's one line, for each front door's reply. */
  refusal(): string {
    return `Request bodies in memory are at their limit of ${this.max} bytes (all requests together): try again later`;
  }
}

const fromEnv = process.env['RQ_WEB_BODY_BUDGET'];
const valid = fromEnv !== undefined && /^[1-9]\d*$/.test(fromEnv);

/** Said in the web's log at start when RQ_WEB_BODY_BUDGET is set but not a positive integer. */
export const BODY_BUDGET_WARNING: string | undefined =
  fromEnv === undefined || fromEnv === '' || valid ? undefined : `RQ_WEB_BODY_BUDGET must be a positive integer (bytes), got ${JSON.stringify(fromEnv)}: using ${DEFAULT_BODY_BUDGET}`;

/** The web process's one budget (see the file comment). */
export const bodyBudget = new BodyBudget(valid ? Number(fromEnv) : DEFAULT_BODY_BUDGET);
