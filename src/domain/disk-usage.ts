/**
 * What a queue holds on disk, as measured (store/disk-usage.ts walks it) and as the
 * `stats` and `clean` replies carry it: messages and bytes per state. Types only.
 */
import type { State } from './states.js';

/** The messages of one state, and the bytes they take. */
export interface StateUsage {
  messages: number;
  bytes: number;
}

/** One measurement of a queue (the `disk` of its `stats` reply). */
export interface DiskUsage {
  /** When the walk ended, epoch seconds. */
  measured_at: number;
  /** How long the walk took. */
  took_ms: number;
  /** Every state's bytes together. */
  bytes: number;
  states: Record<State, StateUsage>;
}
