/**
 * Figure 9 of `npm run bench` (bench.ts runs it): the queue page's lists on big queues,
 * under rq-mgr as `npm start` runs them, from dist/. Two queues of one install:
 *
 *  (a) `waiting`, with N messages waiting (no worker), each with a param1 of one of 1,000
 *      customers, a param2 of its own and a src: the queue page filtered by param1 and
 *      sorted by creation, newest first (`?state=que&param1=customer-7&sort=-created`,
 *      about 11% of the messages match), and filtered by a free text that matches none;
 *  (b) the dashboard's free-text search (`/search?x_format=html`) over `waiting`, no match
 *      (figure 4e's request);
 *  (c) `finished`, a pull queue whose N messages were created and acked straight from
 *      que (16 clients over the socket: the fastest way to make N done messages), so
 *      they are done with their finished records; then given a script, so that rq-mgr
 *      serves it in a process of its own (its finished records read back at start) and
 *      its page is the queue page: filtered by param1 and sorted by duration, longest
 *      first, and a free text that matches none.
 *
 * Each is the p50 and worst of PAGE_REPS GETs, against a bare `GET /css/rq.css` of the
 * same web process, after one untimed GET of each queue's page (it starts the queue's
 * disk-usage walk) and once both walks have ended; goal <= 300 ms (worst). N is 100,000
 * (a tenth with --quick); a fill that reaches its time cap is measured with what it made,
 * and the notes say so.
 */
import fs from 'node:fs';
import path from 'node:path';
import { rpcCall } from '../src/client/rpc.js';
import { queueLayout, rootLayout } from '../src/store/layout.js';
import { timeGets } from './hosting-figures.js';
import { freePort, rqMgr, type PullBenchHelpers } from './pull-figures.js';

const PAGE_REPS = 10;
const CLIENTS = 16;
/** A fill stops here, and the figures are measured with what it made. */
const FILL_CAP_MS = 180_000;
const GOAL_MS = 300;

/** Create up to `n` messages in `queue` over its socket with CLIENTS clients (then `after` each), until FILL_CAP_MS; how many. */
async function fill(h: PullBenchHelpers, socket: string, queue: string, n: number, after?: (id: string) => Promise<void>): Promise<number> {
  const until = performance.now() + FILL_CAP_MS;
  let made = 0;
  await h.runConcurrent(n, CLIENTS, async (i) => {
    if (performance.now() > until) return;
    const msg = { dest: queue, param1: `customer-${i % 1000}`, param2: `order-${i}`, src: 'bench' };
    const reply = (await rpcCall(socket, 'create_message', JSON.stringify(msg))) as [string, string];
    if (reply[0] !== 'ok') throw new Error(`create_message: ${JSON.stringify(reply)}`);
    await after?.(reply[1].slice(reply[1].lastIndexOf('/') + 1));
    made++;
  });
  return made;
}

export async function figureLists(h: PullBenchHelpers): Promise<void> {
  const n = h.quick ? 10_000 : 100_000;
  const size = n.toLocaleString('en-US');
  h.say(`\n[9] the queue page's lists: ${size} waiting, ${size} done (a pull queue's, acked from que)`);
  const root = h.makeInstall('lists');
  const webPort = await freePort();
  const configFile = rootLayout(root).mainConfig;
  const config = JSON.parse(fs.readFileSync(configFile, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(configFile, JSON.stringify({ ...config, port: String(webPort) }));
  for (const [name, script] of [['waiting', './noop.sh'], ['finished', '']] as const) {
    const dir = path.join(rootLayout(root).queuesDir, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ name, script, num_workers: script === '' ? 1 : 0, exec_prefix: '' }));
  }
  rqMgr(root, 'start');
  try {
    const web = `http://127.0.0.1:${webPort}`;
    const socketOf = (name: string): string => queueLayout(rootLayout(root), name).socket;
    for (let i = 0; i < 200 && (await rpcCall(socketOf('finished'), 'ping', '', 1_000).catch(() => null)) === null; i++) await new Promise((r) => setTimeout(r, 50));
    let t0 = performance.now();
    const waiting = await fill(h, socketOf('waiting'), 'waiting', n);
    h.show('filled waiting', `${waiting.toLocaleString('en-US')} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    t0 = performance.now();
    const done = await fill(h, socketOf('finished'), 'finished', n, async (id) => {
      const reply = (await rpcCall(socketOf('finished'), 'ack', JSON.stringify({ ref: id }))) as [string];
      if (reply[0] !== 'ok') throw new Error(`ack: ${JSON.stringify(reply)}`);
    });
    h.show('made done (create + ack)', `${done.toLocaleString('en-US')} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    if (waiting < n || done < n) h.note(`9. the fills stopped at their ${FILL_CAP_MS / 1000} s cap: ${waiting} waiting, ${done} done`);
    // A pull queue's page shows its ready, delayed, leased and dead jobs: give `finished` a
    // script, so rq-mgr moves it to a process of its own (a full recovery, its finished
    // records read back) and its page is the queue page with the done tab.
    const hostPid = fs.readFileSync(queueLayout(rootLayout(root), 'finished').pidFile, 'utf8').trim();
    fs.writeFileSync(path.join(rootLayout(root).queuesDir, 'finished', 'config.json'), JSON.stringify({ name: 'finished', script: path.join(root, 'noop.sh'), num_workers: 1, exec_prefix: '' }));
    rqMgr(root, 'reload');
    for (let i = 0; i < 600; i++) {
      const pid = fs.readFileSync(queueLayout(rootLayout(root), 'finished').pidFile, 'utf8').trim();
      if (pid !== hostPid && (await rpcCall(socketOf('finished'), 'ping', '', 1_000).catch(() => null)) !== null) break;
      await new Promise((r) => setTimeout(r, 100));
    }

    // Untimed: the first page of each queue starts its disk-usage measurement, a walk of
    // its directories in the background that the figures are not about.
    for (const url of ['/css/rq.css', '/q/waiting', '/q/finished']) await timeGets(`${web}${url}`, 1);
    // ...and the figures are taken once both walks have ended (a walk of 100,000
    // directories competes for the disk and the CPU for some seconds, about once a minute).
    for (const name of ['waiting', 'finished']) {
      for (let i = 0; i < 1_200; i++) {
        const stats = (await rpcCall(socketOf(name), 'stats', '', 5_000).catch(() => null)) as { disk?: unknown } | null;
        if (stats?.disk !== null && stats?.disk !== undefined) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const bare = await timeGets(`${web}/css/rq.css`, PAGE_REPS);
    h.show('bare GET /css/rq.css', `p50 ${bare.p50.toFixed(2)} ms`);
    const measure = async (figure: string, url: string): Promise<void> => {
      const t = await timeGets(`${web}${url}`, PAGE_REPS);
      if (t.status !== 200) throw new Error(`GET ${url}: ${t.status}`);
      h.show(figure, `p50 ${t.p50.toFixed(2)} ms, max ${t.max.toFixed(2)} ms`);
      h.addRow({
        figure,
        measured: `p50 ${t.p50.toFixed(2)} ms, max ${t.max.toFixed(2)} ms`,
        limit: `static file: p50 ${bare.p50.toFixed(2)} ms`,
        goal: `<= ${GOAL_MS} ms`,
        verdict: t.max <= GOAL_MS ? 'PASS' : 'MISS',
      });
    };
    const w = waiting.toLocaleString('en-US');
    const d = done.toLocaleString('en-US');
    await measure(`9a. queue page, ${w} waiting, param1 filter, newest first`, '/q/waiting?state=que&param1=customer-7&sort=-created');
    await measure(`9a. queue page, ${w} waiting, text, no match`, '/q/waiting?state=que&text=no-such-text');
    await measure(`9b. search, ${w} waiting, no match`, '/search?x_format=html&name=waiting&q=no-such-text');
    await measure(`9c. queue page, ${d} done, param1 filter, longest first`, '/q/finished?state=done&param1=customer-7&sort=-duration');
    await measure(`9c. queue page, ${d} done, text, no match`, '/q/finished?state=done&text=no-such-text');
  } finally {
    rqMgr(root, 'stop');
  }
}
