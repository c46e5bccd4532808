/**
 * The RQMS front door (docs/doors/rqms.md) over real HTTP, served by the web process of a real
 * rq-mgr, against real queue processes: every route and reply (statuses, phrases,
 * content types), the choices rq made where RQMS's README and reference server differ,
 * byte-wise id order, locks (time ≤ 0, expiry, PUT clearing them), tickets going stale,
 * concurrent fetches, and a queue process killed with -9 while an item is locked. Each
 * describe shares one install; each test has its own queue.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RqError } from '../../src/domain/errors.js';
import { parseMainConfig } from '../../src/domain/main-config.js';
import { parseRqmsSection, rqmsServer } from '../../src/protocols/rqms.js';
import type { ProtocolContext } from '../../src/protocols/context.js';
import { waitFor, type TestRoot } from '../helpers/install.js';
import { sharedProtocols } from '../helpers/protocols.js';

interface Answer {
  status: number;
  type: string;
  text: string;
}

interface Item {
  ticket: string;
  value: unknown;
}

/** One install with rqms enabled for the tests of the calling describe; kept (path printed) when one fails. */
function sharedRqms(): { t: () => TestRoot; base: () => string } {
  const doors = sharedProtocols({ rqms: {} });
  return { t: doors.t, base: () => doors.base('rqms') };
}

function client(base: () => string) {
  const send = async (method: string, pathname: string, body?: string): Promise<Answer> => {
    const res = await fetch(base() + pathname, { method, ...(body === undefined ? {} : { body }) });
    return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
  };
  return {
    send,
    post: (q: string, id: string, value: unknown) => send('POST', `/${q}?id=${encodeURIComponent(id)}`, JSON.stringify(value)),
    put: (q: string, name: string, value: unknown) => send('PUT', `/${q}/${encodeURIComponent(name)}`, JSON.stringify(value)),
    del: (q: string, ticket: string) => send('DELETE', `/${q}`, ticket),
    /** GET and expect a 200 JSON list. */
    async fetch(q: string, query = ''): Promise<Item[]> {
      const a = await send('GET', `/${q}${query}`);
      expect(a.status, a.text).toBe(200);
      expect(a.type).toMatch(/^application\/json/);
      return (JSON.parse(a.text) as { items: Item[] }).items;
    },
  };
}

/** The id a ticket names. */
const idOf = (ticket: string): string => (JSON.parse(ticket) as [string, string])[0];

/** Wait (polling the clock) until `ms` has passed. Locks are made of time; nothing else shows that one ran out. */
const untilPast = (ms: number): Promise<void> => waitFor(() => Date.now() > ms, ms - Date.now() + 5_000, 'the lock to run out');

const html = /^text\/html/;

describe('rqms routes', () => {
  const { t, base } = sharedRqms();
  const c = client(base);

  it('posts, fetches with a ticket, deletes once', async () => {
    expect(await c.post('tasks', 'item-000000001-a', { n: 1 })).toMatchObject({ status: 201, text: 'It shall be done.', type: expect.stringMatching(html) });
    const [item, ...more] = await c.fetch('tasks', '?count=5&time=30');
    expect(more).toEqual([]);
    expect(item!.value).toEqual({ n: 1 });
    expect(typeof item!.ticket).toBe('string');
    const [id, rev] = JSON.parse(item!.ticket) as [string, string];
    expect(id).toBe('item-000000001-a');
    expect(rev).toMatch(/^\d+-[0-9a-f]{32}$/);
    expect(await c.fetch('tasks')).toEqual([]);
    expect(await c.del('tasks', item!.ticket)).toMatchObject({ status: 200, text: 'Well done, sir!', type: expect.stringMatching(html) });
    const again = await c.del('tasks', item!.ticket);
    expect(again.status).toBe(404);
    expect(again.type).toMatch(html);
    expect(await c.fetch('tasks', '?time=0')).toEqual([]);
  });

  it('gives every JSON value back exactly as posted', async () => {
    const texts = ['{"a":[1,2,{"b":null}],"c":"é\\u00e9"}', '[]', '"just a string"', '12345678901234567890', '1.0', '-0', '1e400', 'true', 'false', 'null', ' \n {"padded" : true} \t'];
    for (const [i, text] of texts.entries()) expect((await c.send('POST', `/values?id=v${i}`, text)).status).toBe(201);
    const a = await c.send('GET', '/values?count=100');
    expect(a.status).toBe(200);
    for (const text of texts) expect(a.text).toContain(`"value":${text.trim()}`);
    expect((JSON.parse(a.text) as { items: Item[] }).items.map((i) => idOf(i.ticket))).toEqual(texts.map((_, i) => `v${i}`).sort());
  });

  it('GET on a queue that does not exist answers an empty list and makes nothing', async () => {
    expect(await c.fetch('never-made', '?count=3')).toEqual([]);
    expect(fs.existsSync(t().queueDir('never-made'))).toBe(false);
  });

  it('makes a queue on first write, with the extra CouchDB characters in its name', async () => {
    expect((await c.post('a$b(c)+d', 'x', 1)).status).toBe(201);
    expect(fs.existsSync(path.join(t().queueDir('a$b(c)+d'), 'config.json'))).toBe(true);
    expect((await c.fetch('a$b(c)+d')).map((i) => i.value)).toEqual([1]);
  });

  it('400s a bad queue name on every route', async () => {
    const long = 'q'.repeat(256);
    for (const q of ['.hidden', 'a%20b', 'a*b', 'a%2Fb', long, '', 'x.deleted.12', '%ZZ']) {
      for (const [method, body] of [['POST', '1'], ['PUT', '1'], ['DELETE', '["a","1-0"]']] as const) {
        const a = await c.send(method, `/${q}${method === 'PUT' ? '/name' : '?id=a'}`, body);
        expect(a.status, `${method} /${q}`).toBe(400);
        expect(a.type).toMatch(html);
      }
      const g = await c.send('GET', `/${q}`);
      expect(g.status, `GET /${q}`).toBe(400);
      expect(g.type).toMatch(/^application\/json/);
      expect(JSON.parse(g.text)).toMatchObject({ error: true });
    }
    expect((await c.post('q'.repeat(255), 'a', 1)).status).toBe(201);
  });

  it('400s a missing or bad item id or name, and takes one of 1024 bytes', async () => {
    for (const query of ['', '?id=', '?other=1', '?id=_design', '?id=_', `?id=${'é'.repeat(512)}x`, '?id=%FF']) {
      expect((await c.send('POST', `/ids${query}`, '1')).status, `POST ${query.slice(0, 20)}`).toBe(400);
    }
    for (const name of ['', '_x', `${'é'.repeat(512)}x`, '%FF']) {
      expect((await c.send('PUT', `/ids/${name}`, '1')).status, `PUT ${name.slice(0, 20)}`).toBe(400);
    }
    expect((await c.send('PUT', '/ids', '1')).status).toBe(400);
    const longest = 'é'.repeat(512);
    expect((await c.post('ids', longest, 'post')).status).toBe(201);
    expect((await c.put('ids', `${longest.slice(1)}ab`, 'put')).status).toBe(201);
    expect((await c.post('ids', 'in_the_middle', 'ok')).status).toBe(201);
    expect((await c.fetch('ids', '?count=10')).map((i) => idOf(i.ticket)).sort()).toEqual([longest, `${longest.slice(1)}ab`, 'in_the_middle'].sort());
  });

  it("400s a body that is not JSON, with the reference's phrase", async () => {
    for (const body of ['', '{', "{'a':1}", 'undefined', '{"a":1} x', '\ufeff1']) {
      expect(await c.send('POST', '/bodies?id=a', body)).toMatchObject({ status: 400, text: "That's not all the Queen's English now, is it?" });
      expect(await c.send('PUT', '/bodies/a', body)).toMatchObject({ status: 400, text: "That's not all the Queen's English now, is it?" });
    }
    const notUtf8 = await fetch(`${base()}/bodies?id=a`, { method: 'POST', body: Buffer.from([0x22, 0xff, 0x22]) });
    expect(notUtf8.status).toBe(400);
    expect(await c.fetch('bodies')).toEqual([]);
  });

  it('409s a POST of an id already there and keeps the first value', async () => {
    expect((await c.post('dup', 'a', { v: 1 })).status).toBe(201);
    const second = await c.post('dup', 'a', { v: 2 });
    expect(second.status).toBe(409);
    expect(second.type).toMatch(html);
    const items = await c.fetch('dup', '?count=10');
    expect(items.map((i) => i.value)).toEqual([{ v: 1 }]);
    // Also while it is locked.
    expect((await c.post('dup', 'a', { v: 3 })).status).toBe(409);
  });

  it('concurrent POSTs of one id: exactly one is 201, the others 409', async () => {
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => c.post('dups', 'same', i)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    expect(await c.fetch('dups', '?count=10')).toHaveLength(1);
  });

  it('forgets an id once its item is deleted: POST it again is 201', async () => {
    expect((await c.post('forget', 'x', 'first')).status).toBe(201);
    const [item] = await c.fetch('forget');
    expect((await c.del('forget', item!.ticket)).status).toBe(200);
    expect((await c.post('forget', 'x', 'second')).status).toBe(201);
    const [again] = await c.fetch('forget');
    expect(again!.value).toBe('second');
    expect(again!.ticket).not.toBe(item!.ticket);
    expect((await c.del('forget', item!.ticket)).status).toBe(409);
    expect((await c.del('forget', again!.ticket)).status).toBe(200);
  });

  it("400s a DELETE body that is not a ticket, with the reference's phrase for non-JSON", async () => {
    expect((await c.post('tickets', 'a', 1)).status).toBe(201);
    for (const body of ['', '[', 'not json', "['a','1-x']"]) {
      expect(await c.del('tickets', body)).toMatchObject({ status: 400, text: "I'm sorry, but that sort of language simply will not do.", type: expect.stringMatching(html) });
    }
    for (const body of ['{"a":1}', '["a"]', '["a","1-x","y"]', '["a",1]', '[1,"1-x"]', '["","1-x"]', '"not a ticket"', '"[\\"a\\"]"', 'null', '7']) {
      expect((await c.del('tickets', body)).status, body).toBe(400);
    }
    // Nothing above touched the item.
    const [item] = await c.fetch('tickets');
    expect((await c.del('tickets', item!.ticket)).status).toBe(200);
  });

  it('takes a ticket JSON-encoded once more', async () => {
    expect((await c.post('wrapped', 'a', 1)).status).toBe(201);
    const [item] = await c.fetch('wrapped');
    expect((await c.del('wrapped', JSON.stringify(item!.ticket))).status).toBe(200);
  });

  it('404s a ticket for an item that never was, in a queue that is or is not there', async () => {
    expect((await c.post('nothing', 'a', 1)).status).toBe(201);
    expect((await c.del('nothing', '["b","1-00000000000000000000000000000000"]')).status).toBe(404);
    expect((await c.del('nothing-at-all', '["b","1-00000000000000000000000000000000"]')).status).toBe(404);
  });

  it('409s a ticket whose rev this door did not issue (a forged hash, another queue) while the item is there', async () => {
    expect((await c.post('forged', 'a', 1)).status).toBe(201);
    expect((await c.post('forged2', 'a', 1)).status).toBe(201);
    const [item] = await c.fetch('forged');
    const [id, rev] = JSON.parse(item!.ticket) as [string, string];
    const n = rev.split('-')[0]!;
    for (const bad of [`${n}-${'0'.repeat(32)}`, n, `${n}-`, `x${rev}`, '']) {
      expect(await c.del('forged', JSON.stringify([id, bad]))).toMatchObject({ status: 409, text: 'You may have let me know in a more timely fashion.' });
    }
    // The same rev and id in another queue: that queue's item is not this ticket's.
    const [other] = await c.fetch('forged2');
    expect(JSON.parse(other!.ticket)[1]).not.toBe(rev);
    expect((await c.del('forged2', item!.ticket)).status).toBe(409);
    expect((await c.del('forged', item!.ticket)).status).toBe(200);
    expect((await c.del('forged2', other!.ticket)).status).toBe(200);
  });

  it('fetches in byte-wise order of id, not UTF-16 or locale order', async () => {
    expect((await c.post('order', 'b', 'b')).status).toBe(201);
    expect((await c.post('order', 'a', 'a')).status).toBe(201);
    expect((await c.fetch('order', '?count=1&time=0')).map((i) => i.value)).toEqual(['a']);
    // U+FFFD (EF BF BD) sorts before U+1F600 (F0 9F 98 80) by bytes, after it by UTF-16 units.
    const more = ['Z', 'a0', 'é', 'e', '~', 'a b+c', '\ufffd', '😀', 'ÿ', '€', 'B', '0', 'item-000000010-x', 'item-000000009-y'];
    for (const id of more) expect((await c.post('order', id, id)).status).toBe(201);
    const want = ['a', 'b', ...more].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(want.indexOf('\ufffd')).toBeLessThan(want.indexOf('😀'));
    const got = await c.fetch('order', '?count=100&time=30');
    expect(got.map((i) => idOf(i.ticket))).toEqual(want);
    expect(got.map((i) => i.value)).toEqual(want);
  });

  it('400s a bad count or time as JSON; count above 1000 is clamped to 1000', async () => {
    for (const query of ['?count=0', '?count=-1', '?count=abc', '?count=1.5', '?count=', '?time=abc', '?time=NaN', '?time=Infinity', '?time=', '?time=1e999', '?count=%ZZ']) {
      const a = await c.send('GET', `/clamp${query}`);
      expect(a.status, query).toBe(400);
      expect(a.type).toMatch(/^application\/json/);
      expect(JSON.parse(a.text)).toMatchObject({ error: true, message: expect.any(String) });
    }
    const ids = Array.from({ length: 1001 }, (_, i) => `i${String(i).padStart(4, '0')}`);
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          expect((await c.post('clamp', id, null)).status).toBe(201);
        }
      }),
    );
    expect((await c.fetch('clamp', '?count=99999999999999999999999&time=30')).map((i) => idOf(i.ticket))).toEqual(ids.slice(0, 1000));
    expect((await c.fetch('clamp', '?count=5')).map((i) => idOf(i.ticket))).toEqual([ids[1000]]);
    expect(await c.fetch('clamp', '?count=5')).toEqual([]);
  });

  it('time ≤ 0 locks nothing: the item can be fetched again at once, and only the newest ticket deletes', async () => {
    expect((await c.post('notime', 'a', 1)).status).toBe(201);
    const [first] = await c.fetch('notime', '?time=0');
    const [second] = await c.fetch('notime', '?time=-5');
    const [third] = await c.fetch('notime', '?time=-0.5&count=2');
    expect([first, second, third].map((i) => i && idOf(i.ticket))).toEqual(['a', 'a', 'a']);
    expect(new Set([first!.ticket, second!.ticket, third!.ticket]).size).toBe(3);
    expect((await c.del('notime', first!.ticket)).status).toBe(409);
    expect((await c.del('notime', second!.ticket)).status).toBe(409);
    expect((await c.del('notime', third!.ticket)).status).toBe(200);
  });

  it('a lock runs out: the item comes back; its old ticket deletes while nobody fetched it since', async () => {
    expect((await c.post('expiry', 'kept', 1)).status).toBe(201);
    expect((await c.post('expiry', 'refetched', 2)).status).toBe(201);
    const [kept, refetched] = await c.fetch('expiry', '?count=2&time=1');
    const lockedAt = Date.now();
    expect(await c.fetch('expiry', '?count=2&time=0.5')).toEqual([]);
    await untilPast(lockedAt + 1_000);
    // The delete of `kept` comes first: nobody has fetched it since its lock ran out.
    expect((await c.del('expiry', kept!.ticket)).status).toBe(200);
    const [back, ...none] = await c.fetch('expiry', '?count=2&time=0.5');
    expect(none).toEqual([]);
    expect(idOf(back!.ticket)).toBe('refetched');
    expect(back!.value).toBe(2);
    expect((await c.del('expiry', refetched!.ticket)).status).toBe(409);
    const fetchedAt = Date.now();
    await untilPast(fetchedAt + 500);
    const [again] = await c.fetch('expiry', '?time=30');
    expect(idOf(again!.ticket)).toBe('refetched');
    expect((await c.del('expiry', back!.ticket)).status).toBe(409);
    expect((await c.del('expiry', again!.ticket)).status).toBe(200);
  });

  it('PUT makes an item, replaces one whatever its state, clears its lock and makes old tickets stale', async () => {
    expect(await c.put('set', 'reindex-user-42', true)).toMatchObject({ status: 201, text: 'Well spoken.', type: expect.stringMatching(html) });
    const [locked] = await c.fetch('set', '?time=60');
    expect(locked!.value).toBe(true);
    expect(idOf(locked!.ticket)).toBe('reindex-user-42');
    expect((await c.put('set', 'reindex-user-42', { again: 1 })).status).toBe(201);
    const [fresh] = await c.fetch('set', '?time=60');
    expect(fresh!.value).toEqual({ again: 1 });
    expect(await c.del('set', locked!.ticket)).toMatchObject({ status: 409, text: 'You may have let me know in a more timely fashion.' });
    // Set while available: the value changes, and a ticket of before goes stale too.
    expect((await c.put('set', 'other', 1)).status).toBe(201);
    const [zero] = await c.fetch('set', '?time=0');
    expect(idOf(zero!.ticket)).toBe('other');
    expect((await c.put('set', 'other', 2)).status).toBe(201);
    expect((await c.del('set', zero!.ticket)).status).toBe(409);
    expect((await c.fetch('set', '?count=5&time=0')).map((i) => i.value)).toEqual([2]);
    expect((await c.del('set', fresh!.ticket)).status).toBe(200);
    // A POST of a name that PUT made is a duplicate; a PUT of a posted id sets it.
    expect((await c.post('set', 'other', 3)).status).toBe(409);
    expect((await c.post('set', 'posted', 'p')).status).toBe(201);
    expect((await c.put('set', 'posted', 'q')).status).toBe(201);
    expect((await c.fetch('set', '?count=5&time=0')).map((i) => i.value)).toEqual([2, 'q']);
  });

  it('concurrent sets on one name: every writer gets 201, one value wins', async () => {
    const values = Array.from({ length: 8 }, (_, i) => ({ writer: i }));
    const answers = await Promise.all(values.map((v) => c.put('sets', 'flag', v)));
    expect(answers.map((a) => a.status)).toEqual(values.map(() => 201));
    const items = await c.fetch('sets', '?count=10');
    expect(items).toHaveLength(1);
    expect(values).toContainEqual(items[0]!.value);
  });

  it('concurrent fetches never hand out one item twice', async () => {
    expect((await c.post('race', 'only', 1)).status).toBe(201);
    const got = await Promise.all(Array.from({ length: 10 }, () => c.fetch('race', '?count=1&time=30')));
    expect(got.filter((items) => items.length === 1)).toHaveLength(1);
    expect(got.flat()).toHaveLength(1);
    for (let i = 0; i < 30; i++) expect((await c.post('race', `many-${String(i).padStart(2, '0')}`, i)).status).toBe(201);
    const many = await Promise.all(Array.from({ length: 12 }, () => c.fetch('race', '?count=4&time=30')));
    const ids = many.flat().map((i) => idOf(i.ticket));
    expect(ids).toHaveLength(30);
    expect(new Set(ids).size).toBe(30);
  });

  it('shows an RQ-native message as its short id and params', async () => {
    expect((await c.post('native', 'zz-last-by-rank', 'rqms')).status).toBe(201);
    const msgId = await t().send('native', { param1: 'one', param3: 'three' });
    const items = await c.fetch('native', '?count=5');
    expect(items.map((i) => idOf(i.ticket))).toEqual(['zz-last-by-rank', msgId]);
    expect(Object.keys(items[1]!.value as object)).toEqual(['msg_id', 'param1', 'param2', 'param3', 'param4']);
    expect(items[1]!.value).toMatchObject({ msg_id: msgId, param1: 'one', param3: 'three' });
    expect((await c.del('native', items[1]!.ticket)).status).toBe(200);
    expect(await t().state('native', msgId)).toBe('done');
  });

  it('404s any path with favicon.ico; 400s any other method', async () => {
    expect((await c.send('GET', '/favicon.ico')).status).toBe(404);
    expect((await c.send('POST', '/q/favicon.ico?id=a', '1')).status).toBe(404);
    for (const method of ['PATCH', 'OPTIONS', 'PROPFIND']) {
      expect(await c.send(method, '/anything', method === 'OPTIONS' ? undefined : '1')).toMatchObject({ status: 400, text: 'Kindly stop spinning about me.', type: expect.stringMatching(html) });
    }
    const head = await c.send('HEAD', '/anything');
    expect(head.status).toBe(400);
    expect(head.type).toMatch(html);
  });

  it('413s a body over 10 MiB, declared or sent', async () => {
    const big = `"${'x'.repeat(10 * 1024 * 1024)}"`;
    const a = await c.send('POST', '/big?id=a', big);
    expect(a.status).toBe(413);
    expect(a.type).toMatch(html);
    // Declared too big: answered before the body comes.
    const raw = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(Number(new URL(base()).port), '127.0.0.1');
      let out = '';
      sock.on('data', (d: Buffer) => {
        out += d.toString('latin1');
        // The whole reply is there: the server reads on (and drops) the body it announced.
        if (/\r\n\r\n[^]*\.$/.test(out)) sock.destroy();
      });
      sock.on('error', reject);
      sock.on('close', () => resolve(out));
      sock.write(`PUT /big/a HTTP/1.1\r\nHost: x\r\nContent-Length: ${10 * 1024 * 1024 + 1}\r\n\r\n"x`);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 413 /);
    expect(await c.fetch('big')).toEqual([]);
    // Just under the limit is fine.
    const under = `"${'y'.repeat(10 * 1024 * 1024 - 2)}"`;
    expect((await c.send('POST', '/big?id=b', under)).status).toBe(201);
    const [item] = await c.fetch('big');
    expect(item!.value).toBe(under.slice(1, -1));
  });
});

describe('rqms across failures', () => {
  const { t, base } = sharedRqms();
  const c = client(base);

  it('a queue process killed with -9 while an item is locked: the lock holds until its time, and its ticket deletes', async () => {
    expect((await c.post('crash', 'held', 'h')).status).toBe(201);
    expect((await c.post('crash', 'short', 's')).status).toBe(201);
    const [held] = await c.fetch('crash', '?time=60');
    const [short] = await c.fetch('crash', '?time=5');
    const lockedAt = Date.now();
    expect(idOf(held!.ticket)).toBe('held');
    expect(idOf(short!.ticket)).toBe('short');
    await t().killQueueUnderMgr('crash');
    // A precondition, not a speed claim: the restart (5 ms backoff in tests) came well within the short lock.
    expect(Date.now()).toBeLessThan(lockedAt + 5_000);
    expect(await c.fetch('crash', '?count=5')).toEqual([]);
    expect((await c.del('crash', held!.ticket)).status).toBe(200);
    await untilPast(lockedAt + 5_000);
    // The lock ends on a timer in the restarted process, a commit after its instant: wait for it.
    let back: Item | undefined;
    await waitFor(async () => (back = (await c.fetch('crash', '?count=5&time=30'))[0]) !== undefined, 5_000, 'the short lock to end');
    expect(idOf(back!.ticket)).toBe('short');
    expect((await c.del('crash', short!.ticket)).status).toBe(409);
    expect((await c.del('crash', back!.ticket)).status).toBe(200);
  });

  it('a queue that makes no progress for 5 s gets the watchdog 500; a fetch it cut short hands its lease back', async () => {
    expect((await c.post('stuck', 'a', 1)).status).toBe(201);
    const pid = t().pidIn('queues/stuck/queue.pid')!;
    process.kill(pid, 'SIGSTOP');
    try {
      const [get, post] = await Promise.all([c.send('GET', '/stuck?time=600'), c.post('stuck', 'b', 2)]);
      for (const a of [get, post]) {
        expect(a.status).toBe(500);
        expect(a.type).toMatch(/^application\/json/);
        expect(JSON.parse(a.text)).toEqual({ error: true, message: 'Internal error processing request' });
      }
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // The late lease (time=600) was handed back, so `a` is there at once; the late POST went through.
    await waitFor(async () => (await t().rpc('stuck', 'pull_stats', {}) as [string, { ready: number }])[1]?.ready === 2, 10_000, 'both items ready');
    expect((await c.fetch('stuck', '?count=5')).map((i) => idOf(i.ticket))).toEqual(['a', 'b']);
  }, 40_000);
});

describe('rqms config', () => {
  it('refuses a key of its section it does not know', () => {
    const ctx = { main: parseMainConfig('{}'), section: { port: 7085, addr: '127.0.0.1', raw: { port: 7085, addr: '127.0.0.1', tokn: 'x' } } } as unknown as ProtocolContext;
    expect(() => rqmsServer(ctx)).toThrow(RqError);
    expect(() => rqmsServer(ctx)).toThrow(/protocols\.rqms\.tokn/);
    const ok = rqmsServer({ ...ctx, section: { port: 7085, addr: '127.0.0.1', raw: { port: 7085 } } });
    ok.close();
  });

  it('takes queues, an array of queue name patterns, and names it when it is bad', () => {
    expect(parseRqmsSection({ port: 1 })).toEqual([]);
    expect(parseRqmsSection({ port: 1, queues: ['nsB.*'] }).map(String)).toEqual(['/^nsB\\..*$/']);
    for (const queues of ['nsB.*', ['a b'], [null]]) {
      expect(() => parseRqmsSection({ port: 1, queues }), JSON.stringify(queues)).toThrow(
        expect.objectContaining({ code: 'RQ_CONFIG', message: expect.stringContaining('"protocols.rqms.queues" must be an array of queue name patterns') }),
      );
    }
  });
});
