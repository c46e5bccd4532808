/**
 * The worker → rq line protocol on fd 3 (docs/scripts.md, "The pipe
 * protocol"). A closed vocabulary: each line parses into one `WorkerReport`.
 *
 * RQ's rule for anything else is written here once: an unrecognised line (including
 * `fail`, which is not `fails`) is progress. Every line, recognised or not, becomes the
 * message's status text. Lines are split the way Ruby's awk-style `split(' ', 2)` does:
 * leading blanks skipped, the command is the first word, and the text is what follows
 * the blanks after it (`"done"` → null, `"done "` → `""`).
 */
import { StringDecoder } from 'node:string_decoder';
import { rubyToI } from '../domain/ruby.js';

/** The wire words; `run`, like any line that is none of the others, is progress. */
const PIPE_WORDS = {
  RUN: 'run',
  DONE: 'done',
  ERR: 'err',
  FAILS: 'fails',
  RELAYED: 'relayed',
  RESEND: 'resend',
  DUP: 'dup',
} as const;

export type WorkerReport =
  | { kind: 'progress'; text: string | null }
  | { kind: 'done'; text: string | null }
  | { kind: 'err'; text: string | null }
  | { kind: 'relayed'; text: string | null }
  | { kind: 'resend'; text: string | null; delaySec: number }
  | { kind: 'dup'; text: string | null; delaySec: number; flag: string; destination: string };

/** Completion reports decide how a run ends; the others do not. */
export type Completion = Extract<WorkerReport, { kind: 'done' | 'err' | 'relayed' | 'resend' }>;

export function isCompletion(r: WorkerReport): r is Completion {
  return r.kind === 'done' || r.kind === 'err' || r.kind === 'relayed' || r.kind === 'resend';
}

/**
 * Split a line into command and text like Ruby's `line.split(' ', 2)`. Ruby's blanks
 * are ASCII only (space, \t, \n, \v, \f, \r): a no-break space is part of a word.
 */
export function splitLine(line: string): { cmd: string; text: string | null } {
  const m = /^[ \t\n\v\f\r]*([^ \t\n\v\f\r]*)(?:[ \t\n\v\f\r]+([\s\S]*))?$/.exec(line);
  const cmd = m?.[1] ?? '';
  if (m?.[2] !== undefined) return { cmd, text: m[2] };
  // "done " has trailing blanks after the command: the text is empty, not absent.
  return { cmd, text: /^[ \t\n\v\f\r]*[^ \t\n\v\f\r]+[ \t\n\v\f\r]+$/.test(line) ? '' : null };
}

export function parseLine(line: string): WorkerReport {
  const { cmd, text } = splitLine(line);
  switch (cmd) {
    case PIPE_WORDS.DONE:
      return { kind: 'done', text };
    case PIPE_WORDS.ERR:
    case PIPE_WORDS.FAILS:
      return { kind: 'err', text };
    case PIPE_WORDS.RELAYED:
      return { kind: 'relayed', text };
    case PIPE_WORDS.RESEND:
      return { kind: 'resend', text, delaySec: rubyToI((text ?? '').split('-')[0]) };
    case PIPE_WORDS.DUP: {
      const [delay = '', flag = '', ...rest] = (text ?? '').split('-');
      return { kind: 'dup', text, delaySec: rubyToI(delay), flag, destination: rest.join('-') };
    }
    case PIPE_WORDS.RUN:
    default:
      return { kind: 'progress', text };
  }
}

/**
 * The longest line kept, in UTF-16 units: a longer one is cut to its first 64 Ki (the
 * rest, up to its LF, is dropped), so a worker writing endless bytes without a newline
 * cannot grow its reader without bound. A status line is a short text.
 */
export const MAX_LINE = 65_536;

/** `text` cut to MAX_LINE, never between the two halves of a surrogate pair. */
function cutLine(text: string): string {
  if (text.length <= MAX_LINE) return text;
  const last = text.charCodeAt(MAX_LINE - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? MAX_LINE - 1 : MAX_LINE);
}

/**
 * Splits a byte stream into lines, carrying a partial line over to the next chunk
 * (the original dropped it). A final line without LF is delivered by `end()`. A UTF-8
 * character cut between two chunks is decoded whole. Lines longer than MAX_LINE are cut.
 */
export function createLineSplitter(onLine: (line: string) => void): { push(chunk: Buffer): void; end(): void } {
  const decoder = new StringDecoder('utf8');
  let partial = '';
  /** The partial line has been cut: drop what comes until its LF. */
  let cut = false;
  const take = (text: string): string => (cut ? '' : text);
  return {
    push(chunk) {
      const lines = decoder.write(chunk).split('\n');
      const last = lines.pop() ?? '';
      for (const piece of lines) {
        onLine(cutLine(partial + take(piece)));
        partial = '';
        cut = false;
      }
      partial += take(last);
      if (partial.length > MAX_LINE) {
        partial = cutLine(partial);
        cut = true;
      }
    },
    end() {
      partial += take(decoder.end());
      if (partial) onLine(cutLine(partial));
      partial = '';
      cut = false;
    },
  };
}
