/**
 * rq-mgr's restart policy: the record it keeps of each queue process (what its death is
 * to lead to, and how often it died), the backoff before a restart, and the limit past
 * which a queue is given up (docs/processes.md). The web process is
 * restarted with the same backoff, and never given up.
 */

/**
 * RQ restarts a queue after up to this many unexpected deaths and gives up at the next one
 * (RQ's rule: a counter over 10); the counter never decays.
 */
export const MAX_RESTARTS = 10;

/**
 * Backoff before restart number n: base × 2^(n-1), at most 50 × base (5 s for the
 * default base of 100 ms; `RQ_RESTART_BACKOFF_MS` sets the base, and the tests make it small).
 */
export function restartDelayMs(n: number, baseMs = Number(process.env['RQ_RESTART_BACKOFF_MS'] ?? 100)): number {
  return Math.min(baseMs * 2 ** Math.max(n - 1, 0), 50 * baseMs);
}

/**
 * What a queue process's exit leads to: RUNNING, a restart (or, past MAX_RESTARTS, ERROR:
 * given up); SHUTDOWN, nothing; DELETE, its directory moved aside.
 */
export type Mark = 'RUNNING' | 'SHUTDOWN' | 'DELETE' | 'ERROR';

/** How a queue is served right now: by a process of its own, or on a host (hosts.ts). */
export interface Serving {
  /** Stop serving it (TERM its process, or ask its host to close it); its end follows. */
  stop(): void;
  /** SIGHUP its own process; a host is told once for all its queues. */
  reload(): void;
}

export interface QueueProc {
  name: string;
  mark: Mark;
  /** Undefined while it is not served (between a death and its restart, say). */
  child: Serving | undefined;
  /** Unexpected deaths since the last start by hand (backoff and the give-up limit). */
  restarts: number;
  /** Processes started after an unexpected death, since rq-mgr started (never reset). */
  autoRestarts: number;
  /** Resolves when its current serving has ended (at once when there is none). */
  exited: Promise<void>;
}
