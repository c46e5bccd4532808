/**
 * Test support for the docs: finds the runnable examples of the README and `docs/`, runs
 * them in a bash session against a temporary install, and compares what they print with
 * what the docs show. The contract the docs are written to is in docs/development.md,
 * "Runnable examples":
 * - a fenced block whose info string is `console` is runnable; `$ ` starts a command, which
 *   goes on while a line ends with `\` or until the terminator of a heredoc it opens; every
 *   other line is output expected from the command before it;
 * - in expected output `…` matches any text, a line that is only `…` any number of lines,
 *   and message ids, dates and times match any id, date and time;
 * - the default ports (web 3333, lmstfy 7777, Cloudq 8000, RQMS 7085, Workq 9922) stand for
 *   free ports the runner picks;
 * - a command ending in `# after a moment` is run again until its output matches (15 s).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface DocCommand {
  /** The command as written (lines joined with newlines). */
  command: string;
  /** The output the doc shows, line by line (none: not checked). */
  expected: string[];
  /** Where it is: `docs/cli.md:42`. */
  where: string;
  /** Whether to run it again until its output matches. */
  retry: boolean;
}

const RETRY_MARK = /#\s*after a moment\s*$/;
const HEREDOC = /<<-?\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\1/;

/** The commands of a Markdown file's `console` blocks, in order. */
export function parseExamples(markdown: string, file: string): DocCommand[] {
  const lines = markdown.split('\n');
  const commands: DocCommand[] = [];
  let inBlock = false;
  let fence = '';
  let current: DocCommand | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (!inBlock) {
      const open = /^(\s*)(`{3,}|~{3,})\s*console\s*$/.exec(line);
      if (open) {
        inBlock = true;
        fence = open[2] ?? '```';
      }
      continue;
    }
    if (line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') {
      inBlock = false;
      current = undefined;
      continue;
    }
    if (line.startsWith('$ ')) {
      const parts = [line.slice(2)];
      const heredoc = HEREDOC.exec(line);
      if (heredoc) {
        const end = heredoc[2];
        while (i + 1 < lines.length && lines[i] !== end) parts.push(lines[++i] ?? '');
      } else {
        while ((lines[i] ?? '').endsWith('\\') && i + 1 < lines.length) parts.push(lines[++i] ?? '');
      }
      const command = parts.join('\n');
      current = { command, expected: [], where: `${file}:${i + 1 - parts.length + 1}`, retry: RETRY_MARK.test(parts[0] ?? '') };
      commands.push(current);
      continue;
    }
    if (current) current.expected.push(line);
  }
  for (const c of commands) while (c.expected.length > 0 && c.expected.at(-1)?.trim() === '') c.expected.pop();
  return commands;
}

/** The ports the docs write, and what they stand for. */
export const DOC_PORTS = [3333, 7777, 8000, 7085, 9922] as const;

/** Replace each doc port (a whole number) with the runner's. */
export function withPorts(text: string, ports: ReadonlyMap<number, number>): string {
  return text.replace(/\b\d{4}\b/g, (n) => String(ports.get(Number(n)) ?? n));
}

const LOOSE: readonly [RegExp, string][] = [
  [/\d{8}\.\d{4}\.\d{2}\.\d{3}\.\d+/g, '\\d{8}\\.\\d{4}\\.\\d{2}\\.\\d{3}\\.\\d+'],
  [/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?/g, '\\d{4}-\\d{2}-\\d{2}[T ]\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?(?:Z|[+-]\\d{2}:?\\d{2})?'],
  [/\b20\d{6}\b/g, '\\d{8}'],
  [/\b\d{2}:\d{2}:\d{2}\b/g, '\\d{2}:\\d{2}:\\d{2}'],
];

/** An expected line as a regular expression. */
function lineMatcher(expected: string): RegExp {
  const tokens: string[] = [];
  let text = expected.trimEnd();
  // Loose parts become placeholders first, so escaping does not touch them.
  for (const [re, source] of LOOSE) {
    text = text.replace(re, () => `\u0000${tokens.push(source) - 1}\u0000`);
  }
  const escaped = text
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*?')
    .replace(/\u0000(\d+)\u0000/g, (_, n: string) => tokens[Number(n)] ?? '');
  return new RegExp(`^${escaped}$`);
}

/** Whether the output lines match the expected lines. */
export function outputMatches(actual: readonly string[], expected: readonly string[]): boolean {
  const matchers = expected.map((e) => (e.trim() === '…' ? null : lineMatcher(e)));
  const go = (a: number, e: number): boolean => {
    if (e === matchers.length) return a === actual.length;
    const m = matchers[e];
    if (m === null) {
      for (let k = a; k <= actual.length; k++) if (go(k, e + 1)) return true;
      return false;
    }
    return m !== undefined && a < actual.length && m.test((actual[a] ?? '').trimEnd()) && go(a + 1, e + 1);
  };
  return go(0, 0);
}

export interface RunResult {
  status: number;
  lines: string[];
}

/**
 * One bash session. Each command is written to a file and sourced with stdin from
 * /dev/null (so a command that reads stdin cannot eat the next one), stderr joined to
 * stdout; a marker line carries its exit status.
 */
export class DocShell {
  private readonly bash: ChildProcessWithoutNullStreams;
  private buffer = '';
  private waiting: ((chunk: string) => void) | undefined;
  private count = 0;
  private readonly cwd: string;

  constructor(cwd: string, env: NodeJS.ProcessEnv) {
    this.cwd = cwd;
    this.bash = spawn('bash', ['--norc', '--noprofile'], { cwd, env, stdio: 'pipe' });
    this.bash.stdout.setEncoding('utf8');
    this.bash.stdout.on('data', (chunk: string) => {
      this.buffer += chunk;
      this.waiting?.(chunk);
    });
    this.bash.stdin.write('exec 2>&1\n');
  }

  /** Run one command; resolves with its exit status and output lines. */
  async run(command: string, timeoutMs = 60_000): Promise<RunResult> {
    const n = ++this.count;
    const file = path.join(this.cwd, `.doc-command-${n}.sh`);
    fs.writeFileSync(file, `${command}\n`);
    const marker = `__rq_doc_${n}_${process.pid}__`;
    this.buffer = '';
    this.bash.stdin.write(`source ${JSON.stringify(file)} </dev/null; printf '\\n${marker} %d\\n' "$?"; rm -f ${JSON.stringify(file)}\n`);
    const deadline = Date.now() + timeoutMs;
    const found = new RegExp(`\\n${marker} (\\d+)\\n`);
    for (;;) {
      const m = found.exec(this.buffer);
      if (m) {
        // The marker starts on a line of its own, after the command's last newline if it printed one.
        const text = this.buffer.slice(0, m.index).replace(/\n$/, '');
        const lines = text === '' ? [] : text.split('\n');
        return { status: Number(m[1]), lines };
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the command did not finish in ${timeoutMs} ms; its output so far:\n${this.buffer}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = undefined;
    }
  }

  close(): void {
    this.bash.stdin.end();
    this.bash.kill('SIGKILL');
  }
}

/** The Markdown files whose examples run: the README and everything under docs/. */
export function docFiles(repo: string): string[] {
  const out = ['README.md'];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(repo, dir), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out;
}
