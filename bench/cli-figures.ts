/**
 * Figure 11 of `npm run bench` (bench.ts runs it): `bin/rq sendmesg`, one call, as an init
 * script or a queue script calls it. An install runs under rq-mgr (from dist/) with one
 * paused queue, so nothing runs the messages meanwhile; each call is `bin/rq sendmesg
 * --dest <queue>` executed as a user runs it (through its shebang), timed from the spawn
 * to the exit, and must print `ok <full id>`. Against this machine's limit in the same
 * run: a bare `node -e 0`, the calls alternated with it so both see the same machine.
 * p50 and p90 over 50 calls of each, after 5 of each that warm the page cache (a tenth
 * of both with --quick).
 *
 * RQ_BENCH_OTHER_RQ=<another build's bin/rq> times that build's `bin/rq sendmesg` too,
 * alternated with the other two, against the same queue: an (info) row, the side-by-side
 * figure for a claim that a change made the CLI faster.
 *
 * The original RQ's Ruby CLI is not installed here; its figure, 65–71 ms p50 on our test
 * machine as issue 24 quotes it, is printed as a reference, not measured. The ratio
 * depends on Node's own start: with NODE_EXTRA_CA_CERTS set, as on our test machine,
 * every Node start reads that certificate bundle first, and a note says so.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { normaliseQueueConfig, serialiseQueueConfig } from '../src/domain/queue-config.js';
import { ensureQueueDirs, queueLayout, rootLayout } from '../src/store/layout.js';
import { REPO, freePort, rqMgr, type PullBenchHelpers } from './pull-figures.js';

const QUEUE = 'cli';
const GOAL_RATIO = 1.2;
const ORIGINAL = '65–71 ms p50, as issue 24 quotes it (not measured here)';

/** One command timed in turn with the others: what it is, how to run it once, its times. */
interface Contender {
  label: string;
  run: () => number;
  ms: number[];
}

/** One run of `file args…`, from the spawn to the exit: its wall time in ms; it throws, with what was printed, when the run failed. */
function timed(file: string, args: readonly string[], env: NodeJS.ProcessEnv, check: (stdout: string) => boolean): number {
  const t0 = performance.now();
  const r = spawnSync(file, args, { env, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0 || !check(r.stdout)) throw new Error(`${file} ${args.join(' ')}: exit ${String(r.status)}, ${r.stdout}${r.stderr}`);
  return ms;
}

export async function figureCli(h: PullBenchHelpers): Promise<void> {
  const runs = h.quick ? 10 : 50;
  const warmup = h.quick ? 2 : 5;
  const other = process.env['RQ_BENCH_OTHER_RQ'];
  h.say(`\n[11] bin/rq sendmesg, one call: ${runs} calls, each alternated with a bare node -e 0${other === undefined ? '' : ` and ${other} sendmesg`}`);
  const root = h.makeInstall('cli');
  const layout = queueLayout(rootLayout(root), QUEUE);
  ensureQueueDirs(layout);
  fs.writeFileSync(layout.configFile, serialiseQueueConfig(normaliseQueueConfig({ name: QUEUE, script: path.join(root, 'noop.sh'), num_workers: 1, exec_prefix: '' })));
  fs.writeFileSync(layout.pauseFlag, '');
  const configFile = rootLayout(root).mainConfig;
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(configFile, JSON.stringify({ ...config, port: String(await freePort()) }));
  rqMgr(root, 'start');
  try {
    const env = { ...process.env, RQ_ROOT: root };
    const sent = (stdout: string): boolean => stdout.startsWith('ok http://') && stdout.includes(`/q/${QUEUE}/`);
    const bare: Contender = { label: 'node -e 0', run: () => timed(process.execPath, ['-e', '0'], env, () => true), ms: [] };
    const rq: Contender = { label: 'bin/rq sendmesg', run: () => timed(path.join(REPO, 'bin/rq'), ['sendmesg', '--dest', QUEUE], env, sent), ms: [] };
    const theirs: Contender | undefined = other === undefined ? undefined : { label: `${other} sendmesg`, run: () => timed(other, ['sendmesg', '--dest', QUEUE], env, sent), ms: [] };
    const contenders = theirs === undefined ? [bare, rq] : [bare, rq, theirs];
    for (let i = 0; i < warmup; i++) for (const c of contenders) c.run();
    for (let i = 0; i < runs; i++) for (const c of contenders) c.ms.push(c.run());
    const p = (c: Contender, at: number): number => h.percentile([...c.ms].sort((a, b) => a - b), at);
    for (const c of contenders) h.show(c.label, `p50 ${p(c, 50).toFixed(1)} ms, p90 ${p(c, 90).toFixed(1)} ms`);
    h.show('the original RQ (its Ruby CLI)', ORIGINAL);
    const ratio = p(rq, 50) / p(bare, 50);
    h.addRow({
      figure: '11. bin/rq sendmesg, one call',
      measured: `p50 ${p(rq, 50).toFixed(1)} ms (${ratio.toFixed(2)}×), p90 ${p(rq, 90).toFixed(1)} ms`,
      limit: `node -e 0: p50 ${p(bare, 50).toFixed(1)} ms, p90 ${p(bare, 90).toFixed(1)} ms`,
      goal: `<= ${GOAL_RATIO}× node -e 0`,
      verdict: ratio <= GOAL_RATIO ? 'PASS' : 'MISS',
    });
    h.note(`11. the original RQ's bin/rq sendmesg: ${ORIGINAL}`);
    if (process.env['NODE_EXTRA_CA_CERTS'] !== undefined) {
      h.note('11. NODE_EXTRA_CA_CERTS is set: every Node start, node -e 0 too, reads that bundle first, which makes the ratio smaller than without it (docs/internals/performance.md, CLI startup)');
    }
    if (theirs !== undefined) {
      h.addRow({
        figure: '11. the other build’s sendmesg',
        measured: `p50 ${p(theirs, 50).toFixed(1)} ms (${(p(theirs, 50) / p(bare, 50)).toFixed(2)}×), p90 ${p(theirs, 90).toFixed(1)} ms`,
        limit: `this build: p50 ${p(rq, 50).toFixed(1)} ms`,
        goal: '(info)',
        verdict: '-',
      });
    }
  } finally {
    rqMgr(root, 'stop');
  }
}
