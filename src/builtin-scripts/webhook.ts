/**
 * The worker of the built-in `webhook` queue (docs/webhooks.md), run by
 * `libexec/webhook_script` once per message. A message is one post-run webhook: the
 * queue engine creates `{"param1": <url>, "param2": <JSON snapshot of the finished
 * message>}` in this queue. The worker POSTs the form `x_format=json&payload=<param2>` to
 * the URL, with RQ's texts: any 2xx is `done successfull post <code>` (sic); anything
 * else is `resend <count² × 60>-<reason>`, so the message is tried again later; after
 * the 16th resend (`RQ_COUNT` > 15) it reports `fail` and ends in `err`.
 *
 * The payload is read from the message itself (`../msg`), not from `RQ_PARAM2`: Linux
 * limits one environment variable to 128 KiB, and a snapshot can be bigger. A URL that
 * is not http or https can never succeed, so it ends in `err` at once (RQ resent it 15
 * times); the engine refuses such a `post_run_webhook` already, so only a message sent
 * to this queue by hand can have one.
 *
 * Beyond RQ, two variables of the webhook queue's `env_vars` tune it:
 * `WEBHOOK_BACKOFF_SECS` (the 60 of the backoff, ≥ 0, default 60) and
 * `WEBHOOK_TIMEOUT_SECS` (how long one POST may take before it counts as a failure,
 * > 0, default 30).
 */
import { RqError, coerceError } from '../domain/errors.js';
import { fieldText, httpUrl } from '../domain/message.js';
import { rubyToI } from '../domain/ruby.js';
import { MAX_COUNT, PAST_MAX_COUNT_LINE, exchange, log, readOwnMessage, resendLine, rqEnv, say, secondsFromEnv } from './worker-io.js';

/** The outcome of the POST: the 2xx code, or the reason for the resend (RQ's texts). */
type PostResult = { ok: true; code: number } | { ok: false; reason: string };

/** POST the form to `url`; a network error or no answer within `timeoutMs` is a failure. */
async function post(url: string, payload: string, timeoutMs: number): Promise<PostResult> {
  const body = new URLSearchParams({ x_format: 'json', payload });
  // RQ's content type exactly (fetch would add `;charset=UTF-8`; the body is ASCII anyway).
  const headers = { 'Content-Type': 'application/x-www-form-urlencoded' };
  const x = await exchange(url, { method: 'POST', body, headers }, timeoutMs);
  if (x.type === 'unreachable') {
    log(`cannot POST to ${url}: ${x.why}`);
    return { ok: false, reason: `Could not connect to or parse URL: ${url}` };
  }
  if (x.status >= 200 && x.status < 300) return { ok: true, code: x.status };
  return { ok: false, reason: `Could not POST to URL: ${x.status} ${x.statusText}`.trimEnd() };
}

/** Deliver the webhook of this run; resolves to the exit status. */
export async function main(): Promise<number> {
  let backoffSecs: number;
  let timeoutSecs: number;
  try {
    backoffSecs = secondsFromEnv('WEBHOOK_BACKOFF_SECS', 60);
    timeoutSecs = secondsFromEnv('WEBHOOK_TIMEOUT_SECS', 30);
    if (timeoutSecs <= 0) throw new RqError('RQ_CONFIG', `WEBHOOK_TIMEOUT_SECS must be a number of seconds above 0, got ${JSON.stringify(process.env['WEBHOOK_TIMEOUT_SECS'])}`);
  } catch (e) {
    say(`err bad webhook queue env_vars: ${coerceError(e).message}`);
    return 1;
  }
  const url = rqEnv('PARAM1');
  if (httpUrl(url) === undefined) {
    say(`err not an http or https URL: ${url}`);
    return 0;
  }
  log(`POST to ${url}`);
  const result = await post(url, fieldText(readOwnMessage()['param2']), timeoutSecs * 1000);
  if (result.ok) {
    say(`done successfull post ${result.code}`);
    return 0;
  }
  const count = rubyToI(rqEnv('COUNT'));
  if (count > MAX_COUNT) {
    say(PAST_MAX_COUNT_LINE);
    say(`fail RQ_COUNT > ${MAX_COUNT} - failing`);
    return 0;
  }
  say(resendLine(count, backoffSecs, result.reason));
  return 0;
}
