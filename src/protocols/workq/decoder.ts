/**
 * The Workq decoder (see docs/doors/workq.md): turns one connection's bytes into requests
 * or the error reply to send. It owns the framing: command lines, flags, data blocks, the
 * reference's error recovery and the size cap; the command table (requests.ts) checks
 * what a line and its block say. It does no I/O and keeps no queue state: the connection
 * (connection.ts) feeds it socket bytes and runs what comes out. Where the protocol leaves
 * room, this is what we decided:
 * - Order of the line checks: command name (`Unknown command`), then flag syntax
 *   (`Invalid command flags`), then the positional count (`Invalid command args`), then the
 *   size (`Invalid payload size` / `Invalid result size`). These are Workq's parser checks:
 *   when one fails, the block is left unread and its bytes are read as the next line.
 * - Size cap: a command line (with its CR LF) plus its block's bytes may not exceed
 *   1,058,576 bytes (10,000 of line plus 1 MiB); past that, or when that many bytes arrive
 *   with no LF, the connection is closed without reply.
 * - A command line that is an HTTP request line (`POST / HTTP/1.1`) or a `Host:` header
 *   closes the connection, as Redis does: a browser that a page of another site sends to
 *   this port (a form POST, or DNS rebinding) can carry Workq commands in its body, and no
 *   Workq command line looks like either. Data blocks are not command lines.
 */
import { parseInt } from './arguments.js';
import { clientError } from './replies.js';
import { BLOCK_COMMANDS, E, LINE_COMMANDS, checkBlockCommand, checkLineCommand, type Checked, type Line, type WireOptions, type WorkqRequest } from './requests.js';

/** What the decoder produced, in stream order. */
export type Decoded =
  | { request: WorkqRequest }
  /** An error reply to write as it is (e.g. `-CLIENT-ERROR Invalid ID\r\n`): the command failed a check. */
  | { reply: Buffer }
  /**
   * A framing violation (bare LF, over-size command), or a command line that is HTTP
   * (`http`): close the connection without replying. Nothing is decoded after it.
   */
  | { close: true; http?: true };

const CR = 0x0d;
const LF = 0x0a;

/** The largest block, and the largest command (10,000 bytes of line plus 1 MiB). */
const MAX_BLOCK = 1_048_576;
const MAX_COMMAND = 1_058_576;

const CLOSE: Decoded = { close: true };
/** An HTTP request line (`<method> <target> HTTP/<d>.<d>`) or a Host header: never a Workq command. */
const HTTP_LINE = /^(?:[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/\d+\.\d+|host:.*)$/is;
const fail = (text: string): Decoded => ({ reply: clientError(text) });
const outcome = (checked: Checked): Decoded => (typeof checked === 'string' ? fail(checked) : { request: checked });

/**
 * The bytes received and not decoded yet, kept as the chunks they came in: a block is copied
 * once, when it is complete, and the search for a line's LF looks at each byte once however
 * the line was split.
 */
class Input {
  private chunks: Buffer[] = [];
  length = 0;
  /** The search for LF has looked through chunks before this index, which hold `scanned` bytes. */
  private scanChunk = 0;
  private scanned = 0;

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.length += chunk.length;
  }

  /** Offset of the first LF, or -1. */
  indexOfLf(): number {
    for (; this.scanChunk < this.chunks.length; this.scanChunk++) {
      const chunk = this.chunks[this.scanChunk]!;
      const at = chunk.indexOf(LF);
      if (at >= 0) return this.scanned + at;
      this.scanned += chunk.length;
    }
    return -1;
  }

  /** Removes and returns the first n bytes (n <= length). */
  take(n: number): Buffer {
    const head: Buffer[] = [];
    let need = n;
    let used = 0;
    while (need > 0) {
      const chunk = this.chunks[used]!;
      if (chunk.length <= need) {
        head.push(chunk);
        need -= chunk.length;
        used++;
      } else {
        head.push(chunk.subarray(0, need));
        this.chunks[used] = chunk.subarray(need);
        need = 0;
      }
    }
    this.chunks.splice(0, used);
    this.length -= n;
    this.scanChunk = 0;
    this.scanned = 0;
    return head.length === 1 ? head[0]! : Buffer.concat(head, n);
  }

  clear(): void {
    this.chunks = [];
    this.length = 0;
    this.scanChunk = 0;
    this.scanned = 0;
  }
}

/** Incremental decoder of one connection's byte stream. */
export class WorkqDecoder {
  private readonly options: WireOptions;
  private readonly input = new Input();
  /** A block command whose line passed the parser checks, waiting for `size` bytes and CR LF. */
  private awaiting: { line: Line; size: number; lineBytes: number } | undefined;
  private closed = false;

  constructor(options: WireOptions) {
    this.options = options;
  }

  /** Feed the bytes that arrived; returns everything now complete, in order. Keeps partial input for the next call. */
  push(chunk: Buffer): Decoded[] {
    const out: Decoded[] = [];
    if (this.closed) return out;
    this.input.push(chunk);
    for (let next = this.next(); next !== undefined; next = this.next()) {
      out.push(next);
      if ('close' in next) {
        this.closed = true;
        this.input.clear();
        this.awaiting = undefined;
        break;
      }
    }
    return out;
  }

  /** Bytes held for an incomplete command (0 when idle between commands). The server closes without reply at EOF when > 0 (EOF in the middle of a line). */
  get pending(): number {
    return this.input.length + (this.awaiting?.lineBytes ?? 0);
  }

  /** The next complete item, or undefined when more bytes are needed. */
  private next(): Decoded | undefined {
    for (;;) {
      const awaiting = this.awaiting;
      if (awaiting !== undefined) {
        const { line, size } = awaiting;
        if (this.input.length < size + 2) return undefined;
        this.awaiting = undefined;
        const block = this.input.take(size + 2);
        if (block[size] !== CR || block[size + 1] !== LF) return fail(BLOCK_COMMANDS.get(line.cmd)!.sizeError);
        return outcome(checkBlockCommand(line, block.subarray(0, size), this.options));
      }
      const lf = this.input.indexOfLf();
      if (lf < 0) return this.input.length >= MAX_COMMAND ? CLOSE : undefined;
      if (lf + 1 > MAX_COMMAND) return CLOSE;
      const raw = this.input.take(lf + 1);
      if (raw[lf - 1] !== CR) return CLOSE; // a bare LF, also a line that is only `\n`
      const text = raw.toString('latin1', 0, lf - 1);
      if (HTTP_LINE.test(text)) return { close: true, http: true };
      const decoded = this.decodeLine(text, lf + 1);
      if (decoded !== undefined) return decoded;
    }
  }

  /** The parser checks on one line; undefined when a block command now waits for its block. */
  private decodeLine(text: string, lineBytes: number): Decoded | undefined {
    const [cmd = '', ...tokens] = text.split(' ');
    const block = BLOCK_COMMANDS.get(cmd);
    if (block === undefined && !LINE_COMMANDS.has(cmd)) return fail(E.unknown);
    const args: string[] = [];
    const flags = new Map<string, string>();
    for (const token of tokens) {
      if (token === '') continue;
      const eq = token.indexOf('=');
      if (token.startsWith('-') && eq >= 0) {
        const key = token.slice(1, eq);
        const value = token.slice(eq + 1);
        if (key === '' || value === '' || flags.has(key)) return fail(E.flags);
        flags.set(key, value);
      } else {
        args.push(token);
      }
    }
    const line: Line = { cmd, args, flags };
    if (block === undefined) return outcome(checkLineCommand(line, this.options));
    if (args.length !== block.args) return fail(E.args);
    const size = parseInt(args[block.args - 1]!, 0, MAX_BLOCK);
    if (size === undefined) return fail(block.sizeError);
    if (lineBytes + size > MAX_COMMAND) return CLOSE;
    this.awaiting = { line, size, lineBytes };
    return undefined;
  }
}
