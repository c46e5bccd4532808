/**
 * `bin/rq`, RQ's command line (docs/cli.md): parse `rq <command> [--option[=value] …]`,
 * make one RPC call to the queue's socket under the install root, and print RQ's one-line
 * reply `<reply[0]> <reply[1]>`. The exit status is 0 exactly when the reply is `ok`.
 *
 * Where RQ crashed with a stack trace (missing option, unknown queue, relay without
 * `--relay-ok`, queue process not answering, attachment pre-check), this door throws an
 * RqError whose message is the one line printed on stderr; stdout stays empty and the
 * exit status comes from EXIT_CODES. Only those lines, the help text and the reply lines
 * are printed. While rq-mgr runs, a queue process that does not answer is restarting:
 * the call waits for it (client/call.ts), then exits 75 (EX_TEMPFAIL: nothing was done,
 * run it again) or, when the command may have been done, 1 with the id of the message a
 * create was making.
 *
 * Every CLI call pays Node's start-up, so this module stays tiny on purpose: node
 * built-ins and a few dependency-free modules (the RPC framing and its restart-aware
 * call and the typed queue client, ids, names, the path layout, the install root, the pid
 * file check, the router rules), all subcommands
 * in the one table below instead of one file each, and no logger. Importing it has no
 * side effects; `bin/rq` calls `main`. `npm run build` bundles this module and what it
 * imports into one CommonJS file, dist/src/cli/rq.cjs, which is what `bin/rq` loads:
 * whatever is imported here is loaded by every call, so keep node:crypto and the
 * libraries out of it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RESTART_WAIT_MS } from '../client/call.js';
import { QueueClient } from '../client/queue-client.js';
import { isRefusal } from '../client/refusal.js';
import { isOk } from '../client/rpc.js';
import { RqError, coerceError, type ErrorCode } from '../domain/errors.js';
import { parseFullId } from '../domain/ids.js';
import { isValidQueueName } from '../domain/names.js';
import { installRoot } from '../lib/install-root.js';
import type { ArgOf, AttachArg, QueueCommand, ReplyOf } from '../rpc/queue-api.js';
import { describeRule, loadRules, type Rule } from '../router/rules.js';
import { checkAttachmentSource } from '../store/attachment-source.js';
import { queueLayout, rootLayout } from '../store/layout.js';
import { runningPid } from '../supervisor/pid-file.js';

/** An option's value: the text given, or `true` for a bare `--flag` (RQ's JSON `true`). */
type OptionValue = string | true;
type Options = Map<string, OptionValue>;

/** The CLI's mapping from error codes to exit statuses (every failure is 1, as in RQ, but "try again", 75). */
export const EXIT_CODES = {
  RQ_NOT_FOUND: 1,
  RQ_NOT_IN_STATE: 1,
  RQ_BAD_MESSAGE: 1,
  RQ_BAD_REQUEST: 1,
  RQ_QUEUE_DOWN: 1,
  RQ_QUEUE_NOT_FOUND: 1,
  RQ_ATTACH: 1,
  RQ_IO: 1,
  RQ_PROTOCOL: 1,
  RQ_CONFIG: 1,
  RQ_FORBIDDEN: 1,
  RQ_UPSTREAM: 1,
  RQ_TOO_LARGE: 1,
  RQ_BUSY: 1,
  RQ_ENCODED_BODY: 1,
  RQ_DUPLICATE: 1,
  RQ_STALE: 1,
  RQ_NOT_PULL: 1,
  RQ_UNAVAILABLE: 75,
  RQ_OUTCOME_UNKNOWN: 1,
  RQ_NO_SPACE: 1,
} as const satisfies Record<ErrorCode, number>;

/** Where a command writes, and what it resolves against (main fills it from the process). */
interface CliContext {
  root: string;
  cwd: string;
  out: (text: string) => void;
  err: (text: string) => void;
}

interface Command {
  usage: string;
  /** Resolves to the exit status; throws RqError for the failures RQ crashed on. */
  run: (opts: Options, ctx: CliContext) => Promise<number>;
}

/**
 * RQ's option parsing, shared by every command: an argument that *contains* `--` is an
 * option named by the argument minus its first two characters; `--k=v` splits at the
 * first `=`; `--k v` takes the next argument when it exists and contains no `--`;
 * otherwise the value is `true`. Other arguments are ignored; the last repeat wins.
 */
export function parseOptions(args: readonly string[]): Options {
  const opts: Options = new Map();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (!arg.includes('--')) continue;
    const body = arg.slice(2);
    const eq = body.indexOf('=');
    if (eq >= 0) {
      opts.set(body.slice(0, eq), body.slice(eq + 1));
    } else {
      const next = args[i + 1];
      if (next !== undefined && !next.includes('--')) {
        opts.set(body, next);
        i++;
      } else {
        opts.set(body, true);
      }
    }
  }
  return opts;
}

/** A required option must be given with a value (a bare flag is not a value). */
function required(opts: Options, name: string): string {
  const value = opts.get(name);
  if (typeof value !== 'string') throw new RqError('RQ_BAD_REQUEST', `Missing argument: --${name}`);
  return value;
}

/** Render one reply element as Ruby's string interpolation would (nil → empty). */
function show(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** The socket of an existing queue; `Queue not found` for a bad name or a missing directory. */
function queueSocket(ctx: CliContext, queue: string): string {
  if (isValidQueueName(queue)) {
    const q = queueLayout(rootLayout(ctx.root), queue);
    try {
      if (fs.statSync(q.dir).isDirectory()) return q.socket;
    } catch {
      // missing: not found
    }
  }
  throw new RqError('RQ_QUEUE_NOT_FOUND', `Queue not found: ${queue}`);
}

/** One RPC to a queue; a silent queue process (see the file comment) or a reply of the wrong shape is an error. */
async function call<K extends QueueCommand>(ctx: CliContext, queue: string, command: K, arg: ArgOf<K>): Promise<ReplyOf<K>> {
  const socket = queueSocket(ctx, queue);
  const root = rootLayout(ctx.root);
  const client = new QueueClient(root, { peer: () => `Queue ${queue} on ${socket}`, waitMs: runningPid(root) === undefined ? 0 : RESTART_WAIT_MS });
  return client.send(queue, command, arg);
}

/** Print `<reply[0]> <reply[1]>` (or `<reply[0]> <shown>`; a refusal's code is not printed), and the exit status it means. */
function finish(ctx: CliContext, reply: readonly unknown[], shown: unknown = reply[1]): number {
  ctx.out(`${show(reply[0])} ${show(shown)}\n`);
  return isOk(reply) ? 0 : 1;
}

/** The keys a new message takes from the options (`--relay-ok` is not one of them). */
const MESSAGE_KEYS = ['dest', 'src', 'count', 'max_count', 'param1', 'param2', 'param3', 'param4', 'due', 'force_remote'] as const;

function messageInput(opts: Options): Record<string, unknown> {
  const msg: Record<string, unknown> = {};
  for (const key of MESSAGE_KEYS) {
    const value = opts.get(key);
    if (value !== undefined) msg[key] = value;
  }
  return msg;
}

/** sendmesg / prepmesg: a URL destination goes to the `relay` queue, and only with `--relay-ok`. */
function creator(command: 'create_message' | 'prep_message'): Command['run'] {
  return async (opts, ctx) => {
    const dest = required(opts, 'dest');
    let queue = dest;
    if (dest.startsWith('http:')) {
      if (!opts.has('relay-ok')) throw new RqError('RQ_BAD_REQUEST', `Cannot relay message: ${dest} needs --relay-ok`);
      queue = 'relay';
    }
    return finish(ctx, await call(ctx, queue, command, messageInput(opts)));
  };
}

/** `--msg_id <full id>`: the queue and the short id, split with RQ's patterns (ids.ts). */
function target(opts: Options): { fullId: string; queue: string; shortId: string } {
  const fullId = required(opts, 'msg_id');
  const { queue, shortId } = parseFullId(fullId);
  if (queue === undefined) {
    throw new RqError('RQ_QUEUE_NOT_FOUND', `Queue not found: --msg_id ${fullId} names no queue (expected a full id …/q/<queue>/<id>)`);
  }
  return { fullId, queue, shortId };
}

/** A command that sends `{msg_id}` and prints the reply as it is. */
function byId(command: 'commit_message' | 'get_message_state' | 'clone_message'): Command['run'] {
  return async (opts, ctx) => {
    const { queue, shortId } = target(opts);
    return finish(ctx, await call(ctx, queue, command, { msg_id: shortId }));
  };
}

/**
 * verify_rules: load a router rules file as the router does (docs/router.md; the format
 * is in src/router/rules.ts), conditional actions resolved with this environment. Prints
 * `ok`, after one JSON line per rule with `--verbose`; or RQ's `fail bad router rules
 * file`, with what is wrong on stderr.
 */
async function verifyRules(opts: Options, ctx: CliContext): Promise<number> {
  const file = path.resolve(ctx.cwd, required(opts, 'path'));
  let rules: Rule[];
  try {
    rules = loadRules(file, process.env);
  } catch (thrown) {
    if (!(thrown instanceof RqError)) throw thrown;
    ctx.out('fail bad router rules file\n');
    ctx.err(`${thrown.message}\n`);
    return 1;
  }
  if (opts.has('verbose')) for (const rule of rules) ctx.out(`${describeRule(rule)}\n`);
  ctx.out('ok\n');
  return 0;
}

const SEND_USAGE = '--dest <queue or URL> [--src --count --max_count --param1..--param4 --due --force_remote --relay-ok]';

/** Every subcommand, by its RQ name (RQ's methods were `cmd_<name>`). */
const COMMANDS: Record<string, Command> = {
  sendmesg: { usage: SEND_USAGE, run: creator('create_message') },
  prepmesg: { usage: SEND_USAGE, run: creator('prep_message') },
  single_que: {
    usage: '--dest <queue> [same options as sendmesg, no relay]',
    run: async (opts, ctx) => finish(ctx, await call(ctx, required(opts, 'dest'), 'single_que', messageInput(opts))),
  },
  attachmesg: {
    usage: '--msg_id <full id> --pathname <file> [--name <name>] [--local_fs_only]',
    run: async (opts, ctx) => {
      const { fullId, queue, shortId } = target(opts);
      const pathname = path.resolve(ctx.cwd, required(opts, 'pathname'));
      checkAttachmentSource(pathname);
      // A bare `--name` names nothing: the queue takes the file's own name, as without it.
      const [name, localFsOnly] = [opts.get('name'), opts.get('local_fs_only')];
      const arg: AttachArg = { msg_id: shortId, pathname, ...(typeof name === 'string' ? { name } : {}), ...(localFsOnly !== undefined ? { local_fs_only: localFsOnly } : {}) };
      const reply = await call(ctx, queue, 'attach_message', arg);
      return finish(ctx, reply, `${show(reply[1])} for Message: ${fullId} attachment`);
    },
  },
  commitmesg: { usage: '--msg_id <full id>', run: byId('commit_message') },
  state: { usage: '--msg_id <full id>', run: byId('get_message_state') },
  clone: { usage: '--msg_id <full id>', run: byId('clone_message') },
  statusmesg: {
    usage: '--msg_id <full id>',
    run: async (opts, ctx) => {
      const { queue, shortId } = target(opts);
      const reply = await call(ctx, queue, 'get_message_status', { msg_id: shortId });
      return finish(ctx, reply, isRefusal(reply) ? reply[1] : reply[1].status);
    },
  },
  statuscountmesg: {
    usage: '--msg_id <full id>',
    run: async (opts, ctx) => {
      const { queue, shortId } = target(opts);
      const reply = await call(ctx, queue, 'get_message', { msg_id: shortId });
      return finish(ctx, reply, isRefusal(reply) ? reply[1] : (reply[1].count ?? 0));
    },
  },
  attachstatusmesg: {
    usage: '--msg_id <full id>',
    run: async (opts, ctx) => {
      const { queue, shortId } = target(opts);
      const reply = await call(ctx, queue, 'get_message', { msg_id: shortId });
      if (isRefusal(reply)) return finish(ctx, reply);
      const lines = Object.entries(reply[1]._attachments ?? {}).map(([name, a]) => `${name} ${show(a.md5)} ${show(a.size)} ${show(a.path)}\n`);
      const status = finish(ctx, reply, lines.length);
      for (const line of lines) ctx.out(line);
      return status;
    },
  },
  verify_rules: { usage: '--path <rules file> [--verbose]', run: verifyRules },
};

/** The help text: RQ's header, then the sorted command names, two spaces in. */
export function usage(): string {
  return `Valid commands are:\n${Object.keys(COMMANDS)
    .sort()
    .map((name) => `  ${name}\n`)
    .join('')}`;
}

/**
 * Run one command line (without `node` and the script) and resolve to the exit status.
 * Help and unknown commands exit 1, as in RQ.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const c: CliContext = {
    root: installRoot(),
    cwd: process.cwd(),
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  };
  if (argv.length === 0 || argv.includes('-h') || argv.includes('--help')) {
    c.out(usage());
    return 1;
  }
  const name = argv[0]!;
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    c.err(`Command not found: ${name} (cmd_${name})\n`);
    return 1;
  }
  try {
    return await command.run(parseOptions(argv.slice(1)), c);
  } catch (thrown) {
    if (thrown instanceof RqError) {
      c.err(`${thrown.message}\n`);
      if (thrown.code === 'RQ_BAD_REQUEST') c.err(`usage: rq ${name} ${command.usage}\n`);
      return EXIT_CODES[thrown.code];
    }
    c.err(`rq ${name}: internal error: ${coerceError(thrown).stack ?? String(thrown)}\n`);
    return 1;
  }
}
