/**
 * The end of a script's run: the move out of `run` to the outcome's state (done,
 * relayed, err, or back to que for a resend), with the coalesced duplicates the run held
 * aside (`coalesce_params`), and the post-run webhooks. And the full disk: a finish
 * whose move the disk refuses keeps its outcome in memory, and while the disk is full no
 * run starts; every second the finishes and the starts are tried again, until they work.
 */
import fs from 'node:fs';
import path from 'node:path';
import { isOk } from '../client/rpc.js';
import { coerceError, isNoSpace } from '../domain/errors.js';
import type { Message } from '../domain/message.js';
import { markerLine, TIMELINE_LOG } from '../lib/log-markers.js';
import type { RunOutcome } from '../spawn/outcome.js';
import type { JobStatus } from '../store/message-store.js';
import { fullIdOf, isPull, nowSec, type QueueState, type RunEntry } from './state.js';

/** While the disk is full, the runs it held back are tried again this often (see noteNoSpace). */
const NO_SPACE_RETRY_MS = 1_000;

/** Move a finished run to its next state, with its held-aside duplicates, under their locks. */
export function finishRun(s: QueueState, run: RunEntry, outcome: RunOutcome): Promise<void> {
  const dups = s.held.get(run.id) ?? [];
  return s.locks.exclusive([run.id, ...dups.map((d) => d.id)], () => moveFinished(s, run, outcome));
}

/** finishRun's move, and memory's update after it. */
async function moveFinished(s: QueueState, run: RunEntry, outcome: RunOutcome): Promise<void> {
  const { store, log } = s;
  for (const t of run.timers) clearTimeout(t);
  run.timers = [];
  if (run.statusTimer) clearTimeout(run.statusTimer);
  run.statusTimer = undefined;
  store.removePid(run.id);
  // The status to commit with the move: the outcome's, else the run's last line.
  const status: { status?: JobStatus } =
    'status' in outcome && outcome.status !== undefined ? { status: outcome.status } : run.hasStatus ? { status: run.jobStatus } : {};
  // Held until each is moved: a full disk may stop this finish half-way (see below).
  const dups = s.held.get(run.id) ?? [];
  const msg = run.msg;
  const to = outcome.state;
  try {
    if (to === 'done' || to === 'relayed') {
      const parent = fullIdOf(s, run.id);
      const moved = (run.movedDups ??= []);
      for (let d = dups[0]; d !== undefined; d = dups[0]) {
        try {
          const dmsg = store.readMsg('que', d.id);
          dmsg.dup = parent;
          await store.move(d.id, 'que', to, { msg: dmsg, status: `duplicate ${parent}` });
          s.counts[to]++;
          s.stats.messageFinished(to);
          moved.push(fullIdOf(s, d.id));
        } catch (e) {
          if (isNoSpace(e)) throw e;
          log.warn({ msg_id: d.id, err: coerceError(e).message }, 'duplicate vanished before its parent finished');
        }
        dups.shift();
        s.heldIds.delete(d.id);
      }
      if (moved.length > 0) msg.dups = moved;
      await store.move(run.id, 'run', to, { ...status, ...(moved.length > 0 ? { msg } : {}) });
      s.counts[to]++;
      s.stats.messageFinished(to);
    } else {
      releaseHeld(s, run.id);
      delete msg.dups;
      if (outcome.state === 'que') {
        msg.due = nowSec() + outcome.delaySec;
        s.que.insert(await store.enqueue(run.id, 'run', { ...status, msg }));
      } else {
        await store.move(run.id, 'run', 'err', status);
        s.errIds.add(run.id);
        s.stats.messageFinished('err');
      }
    }
    spaceAgain(s);
    if (to !== 'que') queueWebhooks(s, run.id, msg, to);
  } catch (e) {
    if (isNoSpace(e)) {
      // Still in run, on disk and here: tried again when the disk has room (noteNoSpace).
      s.dispatch.unfinished.set(run, outcome);
      noteNoSpace(s, e);
      return;
    }
    log.error({ msg_id: run.id, err: coerceError(e).message, to }, 'cannot finish run; it stays in run/ until restart');
  }
  releaseHeld(s, run.id);
  s.run.delete(run.id);
  s.nudge();
}

/** The duplicates a run holds aside wait in que again as messages of their own. */
export function releaseHeld(s: QueueState, id: string): void {
  for (const d of s.held.get(id) ?? []) {
    s.heldIds.delete(d.id);
    s.que.insert(d);
  }
  s.held.delete(id);
}

/**
 * Post-run webhooks (docs/webhooks.md): at a final state, one message per URL of a
 * `post_run_webhook` array, created in the local `webhook` queue. The payload is the
 * message with its full id and final state. A missing or refusing `webhook` queue is
 * logged; the run's own move has already been committed either way. Each webhook message
 * made is noted in the message's `job/timeline.log` (`RQ WEBHOOK - <url> - <its full id>`),
 * for the message page's timeline: one append for each webhook, none for a message without.
 */
function queueWebhooks(s: QueueState, id: string, msg: Message, state: 'done' | 'relayed' | 'err'): void {
  const hooks = msg.post_run_webhook;
  if (!Array.isArray(hooks)) return;
  const snapshot = JSON.stringify({ ...msg, msg_id: fullIdOf(s, id), state });
  for (const url of hooks as unknown[]) {
    const input = { dest: 'webhook', param1: url, param2: snapshot };
    s.callQueue('webhook', 'create_message', input)
      .then((reply) => {
        if (!isOk(reply)) throw new Error(JSON.stringify(reply));
        noteWebhook(s, id, state, `${String(url)} - ${reply[1]}`);
      })
      .catch((e: unknown) => s.log.error({ msg_id: id, url, err: coerceError(e).message }, 'cannot queue a post-run webhook'));
  }
}

/** The WEBHOOK marker of a webhook message made for message `id`; without it the timeline only lacks a link. */
function noteWebhook(s: QueueState, id: string, state: 'done' | 'relayed' | 'err', text: string): void {
  try {
    fs.appendFileSync(path.join(s.layout.msgDir(state, id), 'job', TIMELINE_LOG), markerLine(process.pid, 'WEBHOOK', text));
  } catch (e) {
    s.log.warn({ msg_id: id, err: coerceError(e).message }, 'cannot note a post-run webhook in timeline.log');
  }
}

/**
 * A write met a full disk (a run's start or finish, a command's write): no run starts
 * until the space timer fires, NO_SPACE_RETRY_MS after the first refusal since it last
 * fired, when the refused finishes and the next starts are tried again. (A refusal does
 * not put the timer off: refused commands must not keep the runs from being tried.) The
 * log says so once, when the disk fills.
 */
export function noteNoSpace(s: QueueState, e: unknown): void {
  const d = s.dispatch;
  if (d.noSpaceSince === undefined) {
    d.noSpaceSince = Date.now();
    const runs = isPull(s) ? '' : ', and runs wait in que';
    s.log.error({ err: coerceError(e).message }, `the disk is full: writes are refused${runs} until one works again, tried every second`);
  }
  d.spaceTimer ??= setTimeout(() => {
    d.spaceTimer = undefined;
    for (const [run, outcome] of d.unfinished) {
      d.unfinished.delete(run);
      void finishRun(s, run, outcome);
    }
    s.nudge();
  }, NO_SPACE_RETRY_MS);
}

/** A write worked (a run's start or finish, a command that writes): the disk has room again. */
export function spaceAgain(s: QueueState): void {
  if (s.dispatch.noSpaceSince === undefined) return;
  s.log.info({ full_ms: Date.now() - s.dispatch.noSpaceSince }, `the disk has room again${isPull(s) ? '' : ': runs start'}`);
  s.dispatch.noSpaceSince = undefined;
}
