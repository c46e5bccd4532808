/**
 * rq-mgr's start-up order: the web process does not wait for the queues. While a queue
 * process is still starting (a long queue recovering, here one made slow on purpose by
 * test/fixtures/slow-start.mjs), the dashboard already answers; `rq-mgr start` still
 * returns only once the queue answers too, and the page then shows it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, useTestRoot, waitFor } from '../helpers/install.js';

/** Preloaded into rq's processes: those named in RQ_TEST_SLOW_START wait before their modules load. */
const SLOW_START = `--import ${path.join(REPO, 'test/fixtures/slow-start.mjs')}`;

const root = useTestRoot();

/** The dashboard's reply, or undefined while nothing listens on the port. */
async function dashboard(port: number): Promise<{ status: number; text: string } | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`);
    return { status: res.status, text: await res.text() };
  } catch {
    return undefined;
  }
}

describe('rq-mgr start-up order', () => {
  it('the dashboard answers while a queue process is still starting', async () => {
    const t = root();
    t.addQueue({ name: 'a', script: 'done.sh' });
    const port = await t.usePort();
    const socket = path.join(t.queueDir('a'), 'queue.sock');
    // The queue process waits 3 s before it loads its modules (rq-mgr waits up to 5 s for a queue).
    const start = t.bin('rq-mgr', ['start'], { NODE_OPTIONS: SLOW_START, RQ_TEST_SLOW_START: 'queue-main', RQ_TEST_SLOW_START_MS: '3000' });
    let first: { status: number; text: string } | undefined;
    await waitFor(async () => (first = await dashboard(port)) !== undefined, 10_000, 'the web to answer');
    const queueServed = fs.existsSync(socket);
    expect(first?.status).toBe(200);
    expect(queueServed).toBe(false);
    expect((await start).code).toBe(0);
    await waitFor(async () => (await t.rpc('a', 'ping', '')) !== null, 10_000, 'queue a to answer');
    const page = await dashboard(port);
    expect(page?.text).toMatch(/QUEUEMGR:.*OPERATIONAL/);
    expect(page?.text).toContain('q/a');
  });
});
