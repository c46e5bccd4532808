/**
 * The docs are tested: every runnable example of the README and `docs/` runs against a
 * temporary install with rq-mgr running, as a reader who ran `npm install` and `npm start`
 * would type it, and prints what the doc shows (the contract: test/helpers/doc-examples.ts).
 * Also: every relative link of the docs leads to a file (and a heading) that exists, and no
 * file of the project cites a document outside the repository.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { DOC_PORTS, DocShell, docFiles, outputMatches, parseExamples, withPorts } from './helpers/doc-examples.js';
import { REPO, freePort } from './helpers/install.js';
import { runBin } from './helpers/run-bin.js';

const RETRY_MS = 15_000;

for (const file of docFiles(REPO)) {
  const commands = parseExamples(fs.readFileSync(path.join(REPO, file), 'utf8'), file);
  if (commands.length === 0) continue;

  describe(file, () => {
    let root = '';
    let shell: DocShell | undefined;
    const ports = new Map<number, number>();
    let failed = false;
    const env = (): Record<string, string> => ({ RQ_ROOT: root });

    beforeAll(async () => {
      root = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-docs-'));
      for (const p of DOC_PORTS) ports.set(p, await freePort());
      const install = await runBin('bin/rq-install', [], env());
      if (install.code !== 0) throw new Error(`bin/rq-install failed: ${install.stdout}${install.stderr}`);
      // The install as `npm start` makes it, on the runner's web port (a number, as the installer writes it).
      const configFile = path.join(root, 'config/config.json');
      const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
      fs.writeFileSync(configFile, JSON.stringify({ ...config, port: ports.get(3333) }));
      // The root looks like the repository a reader runs the examples in.
      fs.symlinkSync(path.join(REPO, 'bin'), path.join(root, 'bin'));
      fs.symlinkSync(path.join(REPO, 'dist'), path.join(root, 'dist'));
      const start = await runBin('bin/rq-mgr', ['start'], env());
      if (start.code !== 0) throw new Error(`bin/rq-mgr start failed: ${start.stdout}${start.stderr}`);
      shell = new DocShell(root, { ...process.env, ...env() });
    }, 60_000);

    afterAll(async () => {
      shell?.close();
      if (root === '') return;
      await runBin('bin/rq-mgr', ['stop'], env());
      if (failed) console.log(`docs examples of ${file}: install root kept at ${root}`);
      else fs.rmSync(root, { recursive: true, force: true });
    }, 60_000);

    for (const c of commands) {
      const title = `${c.where}: $ ${c.command.split('\n')[0] ?? ''}`;
      it(title, async () => {
        onTestFailed(() => {
          failed = true;
        });
        if (!shell) throw new Error('the install did not start');
        const command = withPorts(c.command, ports);
        const expected = c.expected.map((line) => withPorts(line, ports));
        const deadline = Date.now() + (c.retry ? RETRY_MS : 0);
        for (;;) {
          const result = await shell.run(command);
          const matches = result.status === 0 && (expected.length === 0 || outputMatches(result.lines, expected));
          if (matches || Date.now() >= deadline) {
            if (!matches) expect({ status: result.status, output: result.lines.join('\n') }).toEqual({ status: 0, output: expected.length === 0 ? result.lines.join('\n') : expected.join('\n') });
            return;
          }
          await new Promise((r) => setTimeout(r, 200));
        }
      }, 90_000);
    }
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    if (inFence) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1] ?? '');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('docs links', () => {
  it('every relative link leads to a file of the repository, and to a heading of it when it names one', () => {
    const broken: string[] = [];
    for (const file of docFiles(REPO)) {
      const text = fs.readFileSync(path.join(REPO, file), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? '';
        if (/^[a-z]+:/i.test(target)) continue;
        const [rel = '', anchor] = target.split('#');
        const dest = rel === '' ? path.join(REPO, file) : path.resolve(path.dirname(path.join(REPO, file)), rel);
        if (!dest.startsWith(REPO + path.sep) || !fs.existsSync(dest)) {
          broken.push(`${file}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && dest.endsWith('.md') && !anchors(fs.readFileSync(dest, 'utf8')).has(anchor)) {
          broken.push(`${file}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('citations', () => {
  it('no file of the project cites a document outside the repository', () => {
    const outside = new RegExp(['spec/(rq|cloudq|workq|rqms|lmstfy)\\.md', '\\.\\./shared', '§'].join('|'));
    const self = path.relative(REPO, fileURLToPath(import.meta.url));
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: REPO, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f !== '' && f !== self && !/\.(png|jpg|ico|woff2?)$/.test(f) && fs.existsSync(path.join(REPO, f)));
    const citing = files.filter((f) => outside.test(fs.readFileSync(path.join(REPO, f), 'utf8')));
    expect(citing).toEqual([]);
  });
});
