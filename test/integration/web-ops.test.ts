/**
 * The operations routes against real processes: `/metrics` (Prometheus text from
 * prom-client: message gauges, the queues' cumulative counters and run-duration
 * histogram, spawn failures, rq-mgr's restart counts, the web's process metrics) and
 * `/healthz` (200 while rq-mgr answers; 503 with a reason when it is not running or does
 * not answer, shown by a web process started on its own, as a stale install would have).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pidAlive, waitFor } from '../helpers/install.js';
import { sharedInstall, type Web } from '../helpers/web.js';

type Samples = Map<string, number>;

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const LABEL = '[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\.)*"';
const SAMPLE_RE = new RegExp(`^(${NAME}(?:\\{${LABEL}(?:,${LABEL})*\\})?) (\\S+)$`);

/**
 * Parse Prometheus text format 0.0.4 strictly: every line is a HELP, a TYPE (before the
 * samples of its metric) or a sample; samples keyed by `name{labels}` as printed.
 */
function parseProm(text: string): { samples: Samples; types: Map<string, string> } {
  const samples: Samples = new Map();
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const help = new RegExp(`^# HELP (${NAME}) .*$`).exec(line);
    if (help) continue;
    const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`).exec(line);
    if (type) {
      expect(types.has(type[1]!), `TYPE of ${type[1]} once`).toBe(false);
      types.set(type[1]!, type[2]!);
      continue;
    }
    const m = SAMPLE_RE.exec(line);
    expect(m, `a sample line: ${line}`).not.toBeNull();
    const key = m![1]!;
    const base = key.replace(/\{.*$/, '');
    expect([...types.keys()].some((n) => base === n || base.startsWith(`${n}_`)), `TYPE before ${key}`).toBe(true);
    const v = m![2]!;
    samples.set(key, v === '+Inf' ? Infinity : v === '-Inf' ? -Infinity : Number(v));
  }
  return { samples, types };
}

async function metrics(web: Web): Promise<{ samples: Samples; types: Map<string, string> }> {
  const res = await web.get('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseProm(await res.text());
}

describe('/metrics and /healthz with rq-mgr running', () => {
  const { t, web } = sharedInstall({
    setup: (root) => {
      root.addQueue({ name: 'ok', script: 'done.sh' });
      root.addQueue({ name: 'bad', script: 'err.sh' });
      root.addQueue({ name: 'victim', script: 'done.sh' });
      fs.writeFileSync(path.join(root.root, 'noexec.sh'), '#!/bin/sh\necho done >&3\n', { mode: 0o644 });
      root.addQueue({ name: 'noexec', script: './noexec.sh' });
    },
  });

  it('/healthz is 200 ok JSON while rq-mgr answers', async () => {
    const res = await web().get('/healthz');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ status: 'ok', queuemgr: true, pid: t().pidIn('config/queuemgr.pid') });
    expect(typeof body['uptime']).toBe('number');
  });

  it('exposes messages by state, the queues’ counters and run durations, with the values of the runs made', async () => {
    const done = await Promise.all([1, 2, 3].map((i) => t().send('ok', { param1: String(i) })));
    const errs = await Promise.all([1, 2].map(() => t().send('bad', {})));
    for (const id of done) await t().waitState('ok', id, 'done');
    for (const id of errs) await t().waitState('bad', id, 'err');
    await t().send('noexec', {});
    let m = await metrics(web());
    await waitFor(async () => {
      m = await metrics(web());
      return (m.samples.get('rq_worker_spawn_failures_total{queue="noexec"}') ?? 0) > 0;
    }, 10_000, 'a spawn failure of noexec');
    const { samples, types } = m;
    const get = (key: string): number | undefined => samples.get(key);

    expect(types.get('rq_messages')).toBe('gauge');
    expect(get('rq_messages{queue="ok",state="done"}')).toBe(3);
    expect(get('rq_messages{queue="ok",state="que"}')).toBe(0);
    expect(get('rq_messages{queue="bad",state="err"}')).toBe(2);
    const noexec = ['prep', 'que', 'run', 'done', 'err', 'relayed'].map((state) => get(`rq_messages{queue="noexec",state="${state}"}`)!);
    expect(noexec.reduce((a, b) => a + b)).toBe(1);
    for (const name of ['rq_messages_created_total', 'rq_messages_done_total', 'rq_messages_err_total', 'rq_worker_spawn_failures_total', 'rq_queue_restarts_total']) {
      expect(types.get(name), name).toBe('counter');
    }
    expect(get('rq_messages_created_total{queue="ok"}')).toBe(3);
    expect(get('rq_messages_done_total{queue="ok"}')).toBe(3);
    expect(get('rq_messages_err_total{queue="ok"}')).toBe(0);
    expect(get('rq_messages_created_total{queue="bad"}')).toBe(2);
    expect(get('rq_messages_err_total{queue="bad"}')).toBe(2);
    expect(get('rq_worker_spawn_failures_total{queue="ok"}')).toBe(0);
    expect(get('rq_queue_up{queue="ok"}')).toBe(1);
    expect(get('rq_queuemgr_up')).toBe(1);
    expect(get('rq_queue_restarts_total{queue="ok"}')).toBe(0);

    expect(types.get('rq_run_duration_seconds')).toBe('histogram');
    expect(get('rq_run_duration_seconds_count{queue="ok"}')).toBe(3);
    expect(get('rq_run_duration_seconds_bucket{queue="ok",le="+Inf"}')).toBe(3);
    expect(get('rq_run_duration_seconds_sum{queue="ok"}')).toBeGreaterThan(0);
    const buckets = [...samples].filter(([k]) => k.startsWith('rq_run_duration_seconds_bucket{queue="ok",'));
    const les = buckets.map(([k]) => /le="([^"]+)"/.exec(k)![1]!);
    expect(les.at(-1)).toBe('+Inf');
    const bounds = les.slice(0, -1).map(Number);
    expect(bounds).toEqual([...bounds].sort((a, b) => a - b));
    const counts = buckets.map(([, v]) => v);
    expect(counts).toEqual([...counts].sort((a, b) => a - b));

    // The web process's own metrics, from prom-client's defaults.
    expect(types.get('process_cpu_user_seconds_total')).toBe('counter');
    expect(types.has('nodejs_heap_size_used_bytes')).toBe(true);
  });

  it('counts a queue process restarted by rq-mgr, whose own counters start again from 0', async () => {
    await t().waitState('victim', await t().send('victim', {}), 'done');
    expect((await metrics(web())).samples.get('rq_messages_created_total{queue="victim"}')).toBe(1);
    const pid = t().pidIn('queues/victim/queue.pid')!;
    process.kill(pid, 'SIGKILL');
    await waitFor(() => !pidAlive(pid), 5_000, 'the victim to die');
    await waitFor(async () => t().pidIn('queues/victim/queue.pid') !== pid && (await t().rpc('victim', 'ping', '')) !== null, 10_000, 'rq-mgr to restart victim');
    const { samples } = await metrics(web());
    expect(samples.get('rq_queue_restarts_total{queue="victim"}')).toBe(1);
    expect(samples.get('rq_queue_up{queue="victim"}')).toBe(1);
    expect(samples.get('rq_messages_created_total{queue="victim"}')).toBe(0);
    expect(samples.get('rq_messages{queue="victim",state="done"}')).toBe(1);
    expect(samples.get('rq_web_restarts_total')).toBe(0);
  });
});

describe('/healthz and /metrics while rq-mgr is not running', () => {
  // The web process on its own, as if rq-mgr had gone and left it (it has no IPC channel).
  const { t, web } = sharedInstall({ lone: true, setup: (root) => root.addQueue({ name: 'test' }) });

  it('/healthz is 503 with a JSON reason when there is no live rq-mgr pid', async () => {
    fs.rmSync(path.join(t().root, 'config/queuemgr.pid'), { force: true });
    const res = await web().get('/healthz');
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({ status: 'fail', queuemgr: false, reason: 'rq-mgr is not running (config/queuemgr.pid names no live process)' });
  });

  it('/healthz is 503 when rq-mgr’s pid is alive but it does not answer on its socket', async () => {
    // A process that looks like rq-mgr (its command line says so) but serves no socket.
    const fake = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'rq-mgr'], { stdio: 'ignore' });
    const gone = new Promise((r) => fake.once('exit', r));
    fs.writeFileSync(path.join(t().root, 'config/queuemgr.pid'), `${fake.pid}\n`);
    try {
      await waitFor(() => fs.readFileSync(`/proc/${fake.pid}/cmdline`, 'utf8').includes('rq-mgr'), 5_000, 'the fake rq-mgr to exec');
      const res = await web().get('/healthz');
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'fail', queuemgr: false, pid: fake.pid, reason: 'rq-mgr does not answer on config/queuemgr.sock' });
    } finally {
      fs.rmSync(path.join(t().root, 'config/queuemgr.pid'), { force: true });
      fake.kill('SIGKILL');
      await gone;
    }
  });

  it('/metrics still answers, with rq_queuemgr_up 0', async () => {
    const { samples, types } = await metrics(web());
    expect(samples.get('rq_queuemgr_up')).toBe(0);
    expect(types.get('rq_messages')).toBe('gauge');
    expect([...samples.keys()].some((k) => k.startsWith('rq_messages{'))).toBe(false);
    expect(types.has('process_resident_memory_bytes')).toBe(true);
  });
});
