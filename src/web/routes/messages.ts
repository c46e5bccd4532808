/**
 * Message routes (docs/http-api.md): the new-message form (with the queue's
 * `form.json` overrides) and its POST, the message and prep pages and their `.json`
 * read view, `state.json`, clone, run now, commit, delete, destroy, and attachment upload
 * and deletion.
 *
 * Every change is an RPC to the queue that serves the URL's queue (router mode, docs/router.md);
 * the replies, flashes and error texts are RQ's, word for word. Where RQ answered `null`
 * or a 500 because the queue process did not answer, the gateway's `send` waits for a
 * restarting one and otherwise answers 503 (client/call.ts): RQ_UNAVAILABLE when nothing
 * was done, RQ_OUTCOME_UNKNOWN when it may have been (naming the id of a new message
 * that was being made). Where the issue asks for
 * more than RQ: malformed JSON, a `mesg` of the wrong shape and input nested deeper than
 * MAX_JSON_DEPTH are a clear 400 (RQ: 500), a refused clone or run now is a 404 (no such
 * message) or 409 (not in a state for it) with RQ's text (RQ: 500), RQ's failure texts
 * for uploads and attachment deletion go out as text/plain (they echo the client's file
 * name), a string `post_run_webhook` is split on whitespace, as RQ meant to (its
 * precedence bug kept the string), and a queue's refusal for a full disk is a 507 with its
 * text (`no space left on device: queues/<q>`; RQ: `["fail","internal error"]`).
 *
 * Pages show what they show through `<%= %>` only; the view models built here carry
 * text and, for links, only `http(s)` URLs or URLs of this server.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Router, type Request, type Response } from 'express';
import { isOk } from '../../client/rpc.js';
import { asRq, isRefusal, refusalCode } from '../../client/refusal.js';
import { coerceError, errnoCode } from '../../domain/errors.js';
import { parseFullId } from '../../domain/ids.js';
import { MAX_JSON_DEPTH, isTooDeep } from '../../domain/json-depth.js';
import { INPUT_KEYS, isPlainObject } from '../../domain/message.js';
import { rubyToI } from '../../domain/ruby.js';
import { shown, utcTime } from '../format.js';
import type { Logger } from '../../lib/logger.js';
import type { WebContext } from '../context.js';
import { checkMsgId, locateMessage, messageView } from '../lookups.js';
import { param, params, removeUploads, uploads, wantsJson } from '../params.js';
import { probeQueue, type QueueProbe } from '../../client/queue-probe.js';
import { sendPage, urlFor } from '../render.js';
import { timelineOf, type ValuePart } from '../timeline.js';
import { dump, noSpace, refused, rqReply, webError } from '../web-errors.js';
import type { ReplyOf } from '../../rpc/queue-api.js';

/** `_method` of a new message → the queue command that creates it. */
const CREATE_COMMANDS = new Map<string, 'create_message' | 'prep_message' | 'single_que'>([
  ['commit', 'create_message'],
  ['prep', 'prep_message'],
  ['single_que', 'single_que'],
]);

/** `_method` of `POST /q/:name/:msg_id` (besides `run_now`) and RQ's replies for it. */
const MESSAGE_METHODS = new Map<string, { command: 'delete_message' | 'destroy_message' | 'commit_message'; notice: string; error: string; okToQueue: boolean }>([
  ['delete', { command: 'delete_message', notice: 'Message deleted successfully', error: 'Delete got', okToQueue: true }],
  ['destroy', { command: 'destroy_message', notice: 'Message destroyed successfully', error: 'destroy got', okToQueue: true }],
  ['commit', { command: 'commit_message', notice: 'Message committed successfully', error: 'Commit got', okToQueue: false }],
]);

/** The summary rows RQ shows initially hidden, in its order. */
const DETAIL_KEYS = [
  'msg_id',
  'count',
  'max_count',
  'param1',
  'param2',
  'param3',
  'param4',
  'post_run_webhook',
  'orig_msg_id',
  'cloned_from',
  'dups',
  'dup',
  'force_remote',
] as const;

/** A message route's message: the URL's queue, the queue that serves it (router mode), the short id. */
interface Target {
  q: string;
  queue: string;
  id: string;
}

interface SummaryRow {
  key: string;
  hidden: boolean;
  parts: ValuePart[];
}

interface AttachmentRow {
  name: string;
  md5: string;
  size: number;
  /** The download URL; a POST there with `_method=delete` deletes it (prep only). */
  href: string;
}

/** A link when the value is an http(s) URL (a message's full id), else plain text. */
function maybeLink(value: unknown): ValuePart {
  const text = shown(value);
  return /^https?:\/\/\S+$/i.test(text) ? { text, href: text } : { text };
}

/** JSON or form input, described for an error text. */
function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`;
}

/** `due` as RQ stores it, with its time in UTC when it is a time. */
function dueText(due: unknown): string {
  const at = utcTime(due);
  return at === undefined ? shown(due) : `${shown(due)} (${at})`;
}

/** The rows of the summary table: dest, status, state, src, due, then RQ's hidden rows. */
function summaryRows(view: Record<string, unknown>, q: string, root: string): SummaryRow[] {
  const row = (key: string, parts: ValuePart[], hidden = false): SummaryRow => ({ key, hidden, parts });
  const status = shown(view['status']);
  const relayedTo = view['state'] === 'relayed' ? /^relayed - (https?:\/\/\S+)$/i.exec(status)?.[1] : undefined;
  const rows = [
    row('dest', [{ text: shown(view['dest']) }]),
    row('status', relayedTo === undefined ? [{ text: status }] : [{ text: 'relayed - ' }, { text: relayedTo, href: relayedTo }]),
    row('state', [{ text: shown(view['state']) }]),
    row('src', [{ text: Object.hasOwn(view, 'src') ? shown(view['src']) : '' }]),
  ];
  if (Object.hasOwn(view, 'due')) rows.push(row('due', [{ text: dueText(view['due']) }]));
  for (const key of DETAIL_KEYS) {
    if (!Object.hasOwn(view, key)) continue;
    const value = view[key];
    let parts: ValuePart[];
    if (key === 'orig_msg_id' || key === 'dup') parts = [maybeLink(value)];
    else if (key === 'cloned_from' && typeof value === 'string') parts = [{ text: value, href: urlFor(root, 'q', q, value) }];
    else if (key === 'dups' && Array.isArray(value)) {
      parts = [{ text: '[' }, ...value.flatMap((v, i) => (i === 0 ? [maybeLink(v)] : [{ text: ', ' }, maybeLink(v)])), { text: ']' }];
    } else parts = [{ text: shown(value) }];
    rows.push(row(key, parts, true));
  }
  return rows;
}

function attachmentRows(view: Record<string, unknown>, q: string, id: string, root: string): AttachmentRow[] {
  const atts = view['_attachments'];
  if (!isPlainObject(atts)) return [];
  return Object.entries(atts).map(([name, a]) => {
    const info = isPlainObject(a) ? a : {};
    return {
      name,
      md5: shown(info['md5']),
      size: typeof info['size'] === 'number' ? info['size'] : 0,
      href: urlFor(root, 'q', q, id, 'attach', name),
    };
  });
}

/** The queue's `form.json`: absent is no overrides; present but not a JSON object is a 500. */
async function readOverrides(file: string, log: Logger): Promise<Record<string, unknown>> {
  let data: unknown;
  try {
    data = JSON.parse(await fs.promises.readFile(file, 'utf8'));
  } catch (e) {
    if (errnoCode(e) === 'ENOENT') return {};
    log.warn({ file, err: coerceError(e).message }, 'bad form.json');
    throw webError('RQ_CONFIG', 'Bad overrides file');
  }
  if (!isPlainObject(data)) {
    log.warn({ file }, 'bad form.json: not a JSON object');
    throw webError('RQ_CONFIG', 'Bad overrides file');
  }
  return data;
}

/** RQ's `show_field` and `text` over the overrides. */
function formOverrides(data: Record<string, unknown>): { show(id: string): boolean; text(id: string, key: string, fallback: string): string } {
  return {
    show: (id) => data['default'] !== 'hidden' || Object.hasOwn(data, id),
    text(id, key, fallback) {
      const entry = data[id];
      const value = isPlainObject(entry) ? entry[key] : undefined;
      return typeof value === 'string' ? value : fallback;
    },
  };
}

/** What an operator should know before sending to a queue that is not UP. */
function queueWarning(probe: QueueProbe): string | undefined {
  if (!probe.up) return 'The queue process is not answering: sending will fail until rq-mgr restarts it.';
  if (probe.status === 'DOWN') return 'The queue is DOWN: new messages are refused.';
  if (probe.status === 'PAUSE') return 'The queue is paused: new messages wait in que until it resumes.';
  if (probe.status === 'SCRIPTERROR') return "The queue's script cannot run (SCRIPTERROR): new messages wait in que.";
  return undefined;
}

/**
 * The message input of `POST …/new_message` and the reply style: a JSON body
 * is the message; otherwise `x_format=html` takes the form fields `mesg[...]`, and any
 * other `x_format` (default `json`) the JSON text in `mesg`.
 */
function messageInput(req: Request): { input: Record<string, unknown>; html: boolean } {
  if (req.is('application/json')) {
    if (!isPlainObject(req.body)) throw webError('RQ_BAD_REQUEST', `The JSON body must be a message object, got ${describe(req.body)}`);
    return { input: { ...req.body }, html: false };
  }
  const p = params(req);
  const mesg = p['mesg'];
  if (p['x_format'] === 'html') {
    if (!isPlainObject(mesg)) throw webError('RQ_BAD_REQUEST', `With x_format=html the message is the form fields mesg[dest], mesg[param1]…, got ${describe(mesg)}`);
    return { input: { ...mesg }, html: true };
  }
  if (typeof mesg !== 'string') throw webError('RQ_BAD_REQUEST', `Parameter 'mesg' must be the message as JSON text, got ${describe(mesg)}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(mesg);
  } catch (e) {
    throw webError('RQ_BAD_REQUEST', `Bad JSON in 'mesg': ${coerceError(e).message}`);
  }
  if (!isPlainObject(parsed)) throw webError('RQ_BAD_REQUEST', `Parameter 'mesg' must be a JSON object, got ${describe(parsed)}`);
  return { input: parsed, html: false };
}

/**
 * As RQ: Ruby `to_i` of `count` and `max_count`; a string `post_run_webhook` split
 * on whitespace. Beyond RQ (which dropped them silently), an unknown key is a 400 that
 * names it, so a typo like `parm1` is not lost, and so is input nested too deep to store.
 */
function normalise(input: Record<string, unknown>): void {
  if (isTooDeep(input)) throw webError('RQ_BAD_MESSAGE', `The message nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  const unknown = Object.keys(input).filter((k) => k !== '_method' && !INPUT_KEYS.has(k));
  if (unknown.length > 0) {
    throw webError('RQ_BAD_MESSAGE', `Unknown message field${unknown.length > 1 ? 's' : ''} ${unknown.map((k) => JSON.stringify(k)).join(', ')}; known: ${[...INPUT_KEYS].join(', ')}`);
  }
  for (const key of ['count', 'max_count']) {
    if (Object.hasOwn(input, key)) input[key] = rubyToI(input[key]);
  }
  const hook = input['post_run_webhook'];
  if (typeof hook === 'string') input['post_run_webhook'] = hook.split(/\s+/).filter((url) => url !== '');
}

export function messageRoutes(ctx: WebContext): Router {
  const { gw, respond } = ctx;
  const root = ctx.config.relativeRoot;
  const r = Router();

  /** The URL's queue (404 when missing), the queue that serves it, and the checked short id. */
  const target = (req: Request): Target => {
    const q = String(req.params['name']);
    gw.existing(q);
    return { q, queue: gw.routed(q), id: checkMsgId(String(req.params['msg_id'])) };
  };
  const messageUrl = (t: { q: string; id: string }): string => urlFor(root, 'q', t.q, t.id);

  /**
   * A cron entry's Run Now form names the entry (`schedule_entry`, from 1): refused with
   * the entry's error while the queue skips it (a bad cron), so no message is made from
   * an entry that never fires. A queue that does not answer is left to the create.
   */
  const refuseSkippedEntry = async (req: Request, q: string): Promise<void> => {
    const given = param(req, 'schedule_entry');
    if (given === undefined) return;
    const probe = await probeQueue(gw, q);
    if (!probe.up) return;
    const entry = /^[1-9]\d{0,5}$/.test(given) ? probe.schedule[Number(given) - 1] : undefined;
    if (entry === undefined) throw webError('RQ_BAD_REQUEST', `Queue ${q} has no schedule entry ${given}`);
    if (entry.error !== undefined) throw webError('RQ_BAD_REQUEST', `Not run: ${entry.error}. The queue skips this entry until its config.json is fixed.`);
  };

  r.get('/q/:name/new_message', async (req: Request, res: Response) => {
    const q = gw.existing(String(req.params['name']));
    const [overrides, probe] = await Promise.all([readOverrides(path.join(q.dir, 'form.json'), ctx.log), probeQueue(gw, gw.routed(q.name))]);
    await sendPage(res, 'new_message', { q: q.name, form: formOverrides(overrides), warning: queueWarning(probe) });
  });

  r.post('/q/:name/new_message', async (req: Request, res: Response) => {
    const { input, html } = messageInput(req);
    normalise(input);
    const q = gw.existing(String(req.params['name'])).name;
    await refuseSkippedEntry(req, q);
    const method = input['_method'] ?? 'commit';
    const command = typeof method === 'string' ? CREATE_COMMANDS.get(method) : undefined;
    if (command === undefined) throw webError('RQ_BAD_REQUEST', 'Invalid method param');
    const sent = await gw.queues.send(gw.routed(q), command, input);
    if (isRefusal(sent) && refusalCode(sent) === 'RQ_QUEUE_DOWN') throw webError('RQ_QUEUE_DOWN', 'Service Unavailable - Operationally Down');
    const full = noSpace(sent);
    if (full) throw full;
    const reply = rqReply(sent);
    if (!html) {
      res.json(reply);
      return;
    }
    const [word, text] = [shown(reply[0]), shown(reply[1])];
    if (param(req, 'back') !== undefined) {
      respond.redirect(req, res, respond.back(req), isOk(reply) ? { notice: `Created message ${text}` } : { error: `Error creating message: ${text}` });
      return;
    }
    const created = isOk(reply) ? parseFullId(text) : undefined;
    const local = created?.queue === undefined ? undefined : urlFor(root, 'q', created.queue, created.shortId);
    await sendPage(res, 'new_message_result', { q, ok: isOk(reply), word, text, local });
  });

  r.get('/q/:name/:msg_id/state.json', async (req: Request, res: Response) => {
    const loc = await locateMessage(gw, String(req.params['name']), String(req.params['msg_id']));
    res.json([loc.state]);
  });

  r.get('/q/:name/:msg_id', async (req: Request, res: Response) => {
    const q = String(req.params['name']);
    const raw = String(req.params['msg_id']);
    if (raw.endsWith('.json')) {
      res.json((await messageView(gw, q, raw.slice(0, -'.json'.length))).view);
      return;
    }
    const { id, view } = await messageView(gw, q, raw);
    const { state } = view;
    const status = shown(view.status);
    await sendPage(res, state === 'prep' ? 'prep' : 'message', {
      q,
      id,
      state,
      pull: ctx.kinds.one(q).kind === 'pull',
      timeline: state === 'prep' ? undefined : await timelineOf(gw, view, q, id, root),
      jobStatus: status.startsWith(`${state} - `) ? status.slice(state.length + 3) : '',
      rows: summaryRows(view, q, root),
      attachments: attachmentRows(view, q, id, root),
      fields: JSON.stringify(view, null, 2),
    });
  });

  const runNow = async (req: Request, res: Response, t: Target): Promise<void> => {
    const reply = await gw.queues.send(t.queue, 'run_message', { msg_id: t.id });
    if (isRefusal(reply)) throw refused("Couldn't run message.", reply);
    respond.redirect(req, res, messageUrl(t), { notice: 'Message in run successfully' });
  };

  r.post('/q/:name/:msg_id/clone', async (req: Request, res: Response) => {
    const t = target(req);
    const reply = await gw.queues.send(t.queue, 'clone_message', { msg_id: t.id });
    if (isRefusal(reply)) throw refused("Couldn't clone message.", reply);
    respond.redirect(req, res, urlFor(root, 'q', t.q), { notice: 'Message cloned successfully' });
  });

  r.post('/q/:name/:msg_id/run_now', async (req: Request, res: Response) => runNow(req, res, target(req)));

  /** Hand the uploaded `filedata` part to the queue: the target and the queue's reply. */
  const attachUpload = async (req: Request, res: Response): Promise<{ t: Target; reply: ReplyOf<'attach_message'> }> => {
    const t = target(req);
    // A file part with an empty name is a file input left empty (Rack: no file).
    const file = uploads(res)['filedata'];
    if (file === undefined || file.filename === '') throw webError('RQ_NOT_FOUND', "No file uploaded in the 'filedata' part");
    return { t, reply: await gw.queues.send(t.queue, 'attach_message', { msg_id: t.id, pathname: file.path, name: file.filename }) };
  };

  r.post('/q/:name/:msg_id/attach/new', async (req: Request, res: Response) => {
    // The temp file is gone before any reply, as in RQ (its tests list $TMPDIR right after it); the queue linked what it keeps.
    const { t, reply } = await attachUpload(req, res).finally(() => removeUploads(res));
    const full = noSpace(reply);
    if (full) throw full;
    if (wantsJson(req)) res.json(rqReply(reply));
    else if (!isRefusal(reply)) respond.redirect(req, res, messageUrl(t), { notice: 'Attached message successfully' });
    else res.type('text/plain; charset=utf-8').send(`Commit ${t.q}/${t.id} got ${dump(asRq(reply))}`);
  });

  r.post('/q/:name/:msg_id/attach/:attachment_name', async (req: Request, res: Response) => {
    const t = target(req);
    const name = String(req.params['attachment_name']);
    if (param(req, '_method') !== 'delete') throw webError('RQ_BAD_REQUEST', 'Invalid method param');
    const reply = await gw.queues.send(t.queue, 'delete_attach_message', { msg_id: t.id, attachment_name: name });
    if (wantsJson(req)) res.json(rqReply(reply));
    else if (!isRefusal(reply)) respond.redirect(req, res, messageUrl(t), { notice: 'Attachment deleted successfully' });
    else res.type('text/plain; charset=utf-8').send(`Delete of attach ${name} on ${t.q}/${t.id} got ${dump(asRq(reply))}`);
  });

  r.post('/q/:name/:msg_id', async (req: Request, res: Response) => {
    const t = target(req);
    const method = param(req, '_method');
    if (method === 'run_now') {
      await runNow(req, res, t);
      return;
    }
    const action = method === undefined ? undefined : MESSAGE_METHODS.get(method);
    if (action === undefined) throw webError('RQ_BAD_REQUEST', 'Invalid method param');
    const reply = await gw.queues.send(t.queue, action.command, { msg_id: t.id });
    const full = noSpace(reply);
    if (full) throw full;
    if (wantsJson(req)) res.json(rqReply(reply));
    else if (isRefusal(reply)) respond.redirect(req, res, messageUrl(t), { error: `${action.error} ${dump(asRq(reply))}` });
    else respond.redirect(req, res, action.okToQueue ? urlFor(root, 'q', t.q) : messageUrl(t), { notice: action.notice });
  });

  return r;
}
