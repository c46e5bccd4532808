/**
 * How a run ends (docs/scripts.md, "Exit status"): the worker's exit and its **first**
 * completion report decide the message's next state, once, in this table.
 *
 * | exit            | first completion        | next state                                  |
 * | --------------- | ----------------------- | ------------------------------------------- |
 * | 0               | done / relayed / err    | done / relayed / err                        |
 * | 0               | resend N                | que (due now+N), or err at count ≥ max_count |
 * | 0               | none                    | err                                         |
 * | non-0 or signal | err                     | err                                         |
 * | non-0 or signal | done, relayed, resend, none | err, "PROCESS EXITED IMPROPERLY …"      |
 * | killed by the queue's `timeout` (beyond RQ) | any  | err, "TIMEOUT …"                    |
 *
 * Exit codes carry no meaning beyond zero / non-zero: 0 is required for done, relayed
 * and resend; anything else is a permanent failure that waits in `err` for an operator.
 * The improper-exit status names the completion (`Completion was done but exit status
 * was …`) or says there was none (`no completion line, and exit status was …`, where RQ
 * printed an empty word and two spaces); RQ's tests read only `PROCESS EXITED IMPROPERLY`.
 */
import os from 'node:os';
import type { Completion } from './pipe-protocol.js';

export interface RunExit {
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the queue's `timeout` killed the run, in seconds. */
  timedOutAfterSec?: number;
}

export type RunOutcome =
  | { state: 'done' | 'relayed' | 'err'; status?: string }
  | { state: 'que'; delaySec: number };

export const MAX_RESEND_STATUS = 'HIT MAX RESEND COUNT - MOVING TO ERR';

/** RQ's exit description: `pid 12 exit 1` or `pid 12 SIGTERM (signal 15)`. */
export function describeExit(e: RunExit): string {
  if (e.signal) return `pid ${e.pid} ${e.signal} (signal ${os.constants.signals[e.signal]})`;
  return `pid ${e.pid} exit ${e.code ?? '?'}`;
}

export function decideOutcome(exit: RunExit, first: Completion | undefined, count: number, maxCount: number): RunOutcome {
  if (exit.timedOutAfterSec !== undefined) {
    return { state: 'err', status: `TIMEOUT - killed after ${exit.timedOutAfterSec}s - MOVING TO ERR - ${describeExit(exit)}` };
  }
  const clean = exit.signal === null && exit.code === 0;
  if (!clean) {
    if (first?.kind === 'err') return { state: 'err' };
    const completion = first === undefined ? 'no completion line, and' : `Completion was ${first.kind} but`;
    return { state: 'err', status: `PROCESS EXITED IMPROPERLY - MOVING TO ERR - ${completion} exit status was ${describeExit(exit)}` };
  }
  switch (first?.kind) {
    case 'done':
    case 'relayed':
    case 'err':
      return { state: first.kind };
    case 'resend':
      return count >= maxCount ? { state: 'err', status: MAX_RESEND_STATUS } : { state: 'que', delaySec: first.delaySec };
    case undefined:
      return { state: 'err' };
  }
}
