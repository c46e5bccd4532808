/**
 * `bin/check_rq` (docs/operations.md, "Monitoring"): a Nagios-style probe of an rq web server. It reads
 * `GET /q.txt`, then each queue's text (`GET "/" + line`, so `//q/<name>.txt`, which the
 * server collapses), and prints one verdict line with Nagios' exit status: 0 OK,
 * 1 WARNING, 2 CRITICAL, 3 UNKNOWN (bad command line). It runs once per check, so it
 * imports nothing but `node:http`: Node's start-up is already most of its cost.
 *
 * Where rq differs from RQ: the verdict is the worst rule that fires, without RQ's
 * escalation of some warnings to critical; every request has a deadline
 * (`--timeout`, default 10 s); a bad command line exits 3 instead of raising.
 */
import http from 'node:http';

/** Nagios plugin exit statuses. */
const EXIT = { OK: 0, WARNING: 1, CRITICAL: 2, UNKNOWN: 3 } as const;
type Severity = (typeof EXIT)[keyof typeof EXIT];

interface Thresholds {
  backlogWarn: number;
  backlogCrit: number;
  /** The third and fourth numbers of `--thresh` are read and ignored, as in RQ. */
  unused1: number;
  unused2: number;
  doneWarn: number;
  doneCrit: number;
}

interface CheckOptions {
  server: string;
  port: number;
  thresholds: Thresholds;
  dump: boolean;
  /** Deadline for the whole probe, in milliseconds. @default 10000 */
  timeoutMs: number;
}

const DEFAULT_THRESH = '10:20:2000:2500:3000:3500';

const USAGE = `Usage: check_rq [options]
  -s, --server HOST         rq web server (default 127.0.0.1)
  -p, --port PORT           its port (default $RQ_PORT, else 3333)
  -t, --thresh a:b:c:d:e:f  backlog warn:crit, two unused numbers, done/relayed
                            warn:crit (default ${DEFAULT_THRESH})
  -d, --dump                print every queue's fields
      --timeout SECS        give up after SECS seconds (default 10)
  -h, --help
Exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
`;

function parseThresholds(text: string): Thresholds | undefined {
  const parts = text.split(':');
  if (parts.length !== 6 || !parts.every((p) => /^\d+$/.test(p))) return undefined;
  const [a, b, c, d, e, f] = parts.map(Number) as [number, number, number, number, number, number];
  return { backlogWarn: a, backlogCrit: b, unused1: c, unused2: d, doneWarn: e, doneCrit: f };
}

type Parsed = { type: 'check'; options: CheckOptions } | { type: 'help' } | { type: 'error'; message: string };

const LONG: Record<string, string> = { server: 's', port: 'p', thresh: 't', dump: 'd', help: 'h', timeout: 'T' };

/** Parse `-x VALUE`, `-xVALUE`, `--long VALUE` and `--long=VALUE`. */
function parseCheckArgs(argv: readonly string[]): Parsed {
  let server = '127.0.0.1';
  let port = process.env['RQ_PORT'] || '3333';
  let thresh = DEFAULT_THRESH;
  let timeout = '10';
  let dump = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    let flag: string | undefined;
    let inline: string | undefined;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      flag = LONG[arg.slice(2, eq === -1 ? undefined : eq)];
      if (eq !== -1) inline = arg.slice(eq + 1);
    } else if (/^-[sptdh]/.test(arg)) {
      flag = arg[1];
      if (arg.length > 2) inline = arg.slice(2);
    }
    if (flag === undefined) return { type: 'error', message: `unknown option ${arg}` };
    if (flag === 'h' || flag === 'd') {
      if (inline !== undefined) return { type: 'error', message: `option ${arg} takes no value` };
      if (flag === 'h') return { type: 'help' };
      dump = true;
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === '') return { type: 'error', message: `option ${arg} needs a value` };
    if (flag === 's') server = value;
    else if (flag === 'p') port = value;
    else if (flag === 't') thresh = value;
    else timeout = value;
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    return { type: 'error', message: `the port must be a number from 1 to 65535, got ${JSON.stringify(port)}` };
  }
  const thresholds = parseThresholds(thresh);
  if (!thresholds) return { type: 'error', message: `--thresh must be six whole numbers a:b:c:d:e:f, got ${JSON.stringify(thresh)}` };
  if (!/^\d+(\.\d+)?$/.test(timeout) || Number(timeout) <= 0) {
    return { type: 'error', message: `--timeout must be a positive number of seconds, got ${JSON.stringify(timeout)}` };
  }
  return { type: 'check', options: { server, port: Number(port), thresholds, dump, timeoutMs: Number(timeout) * 1000 } };
}

/** The `key: value` lines of a queue text (`GET /q/<name>.txt`), in order; other lines are skipped. */
function parseQueueText(text: string): Array<[string, string]> {
  const fields: Array<[string, string]> = [];
  for (const line of text.split('\n')) {
    const m = /^([^:\s]+):\s?(.*)$/.exec(line);
    if (m) fields.push([m[1] ?? '', m[2] ?? '']);
  }
  return fields;
}

/**
 * check_rq's rules (RQ's) for one queue: its severity and the text of its problems
 * (empty when it is fine). The worst rule wins; nothing is escalated beyond it.
 */
function judgeQueue(fields: ReadonlyArray<[string, string]>, t: Thresholds): { severity: Severity; text: string } {
  const get = (k: string): string | undefined => fields.find(([key]) => key === k)?.[1];
  const num = (k: string): number => Number.parseInt(get(k) ?? '0', 10) || 0;
  let severity: Severity = EXIT.OK;
  const raise = (s: Severity): void => {
    if (s > severity) severity = s;
  };
  const problems: string[] = [];
  const status = get('status');
  if (status !== 'UP') {
    raise(EXIT.CRITICAL);
    problems.push(`status ${status ?? '(none)'}`);
  }
  const [prep, que, run] = [num('prep'), num('que'), num('run')];
  const backlog = prep + que + run;
  if (backlog >= t.backlogWarn || backlog >= t.backlogCrit) {
    raise(backlog >= t.backlogCrit ? EXIT.CRITICAL : EXIT.WARNING);
    problems.push(`prep=>${prep} run=>${run} que=>${que}`);
  }
  const err = num('err');
  if (err > 0) {
    raise(EXIT.CRITICAL);
    problems.push(`errors => ${err}`);
  }
  for (const k of ['done', 'relayed']) {
    const n = num(k);
    if (n >= t.doneWarn || n >= t.doneCrit) {
      raise(n >= t.doneCrit ? EXIT.CRITICAL : EXIT.WARNING);
      problems.push(`${k} => ${n}`);
    }
  }
  return { severity, text: problems.join(' ') };
}

class ProbeError extends Error {
  override readonly name = 'ProbeError';
}

/** GET `path` (sent as is, so `//q/x.txt` stays doubled); resolves with the body of a 200. */
function get(o: CheckOptions, path: string, deadline: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const remainingMs = Math.max(1, deadline - Date.now());
    const req = http.get({ host: o.server, port: o.port, path, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => reject(new ProbeError(`CRITICAL: Could not Fetch ${path}`)));
      res.on('end', () => {
        clearTimeout(timer);
        if (res.statusCode === 200) resolve(Buffer.concat(chunks).toString('utf8'));
        else reject(new ProbeError(`CRITICAL: Could not Fetch ${path}`));
      });
    });
    const timedOut = `CRITICAL: Timed out after ${o.timeoutMs / 1000} s fetching ${path} from ${o.server}:${o.port}`;
    const timer = setTimeout(() => req.destroy(new ProbeError(timedOut)), remainingMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (e) => {
      if (e instanceof ProbeError) reject(e);
      else reject(new ProbeError(`CRITICAL: Could not connect to ${o.server}:${o.port}`));
    });
  });
}

/** Run the probe; returns the lines to print and the exit status. */
async function check(o: CheckOptions): Promise<{ lines: string[]; status: Severity }> {
  const deadline = Date.now() + o.timeoutMs;
  const lines: string[] = [];
  try {
    const index = await get(o, '/q.txt', deadline);
    let worst: Severity = EXIT.OK;
    let summary = '';
    for (const line of index.split('\n')) {
      const name = /q\/(\S+)\.txt/.exec(line)?.[1];
      if (name === undefined) continue;
      const fields = parseQueueText(await get(o, `/${line}`, deadline));
      if (o.dump) {
        lines.push(name);
        for (const [k, v] of fields) lines.push(`\t${k} -> ${v}`);
      }
      const verdict = judgeQueue(fields, o.thresholds);
      if (verdict.severity > EXIT.OK) summary += ` ${name}: ${verdict.text},`;
      if (verdict.severity > worst) worst = verdict.severity;
    }
    if (worst === EXIT.OK) lines.push('OK: all queue tests normal');
    else lines.push(`${worst === EXIT.CRITICAL ? 'CRITICAL' : 'WARNING'}: ${summary}`);
    return { lines, status: worst };
  } catch (e) {
    if (!(e instanceof ProbeError)) throw e;
    lines.push(e.message);
    return { lines, status: EXIT.CRITICAL };
  }
}

/** The command: returns the exit status. */
export async function main(argv: readonly string[]): Promise<number> {
  const parsed = parseCheckArgs(argv);
  if (parsed.type === 'help') {
    process.stdout.write(`HELP is on the way\n${USAGE}`);
    return EXIT.OK;
  }
  if (parsed.type === 'error') {
    process.stdout.write(`UNKNOWN: check_rq: ${parsed.message}\n`);
    process.stderr.write(USAGE);
    return EXIT.UNKNOWN;
  }
  try {
    const { lines, status } = await check(parsed.options);
    process.stdout.write(lines.map((l) => `${l}\n`).join(''));
    return status;
  } catch (thrown) {
    // A bug of the probe is not a verdict on rq: Nagios shows UNKNOWN.
    process.stdout.write(`UNKNOWN: check_rq: ${thrown instanceof Error ? thrown.message : String(thrown)}\n`);
    return EXIT.UNKNOWN;
  }
}
