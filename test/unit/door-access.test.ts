/**
 * door-access.ts: which queues a front door may touch. The namespaces come from a real
 * lmstfy section and a real token table in a temp directory (its file is written as the
 * admin routes would), so minting and revoking are the table's own.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMainConfig } from '../../src/domain/main-config.js';
import { doorAccess, Namespaces, parseQueuePatterns } from '../../src/protocols/door-access.js';
import { rootLayout } from '../../src/store/layout.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** The namespaces of an install whose config.json has these `protocols`. */
function namespaces(protocols: Record<string, unknown>): Namespaces {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rq-door-access-'));
  dirs.push(root);
  fs.mkdirSync(path.join(root, 'config'));
  return Namespaces.open(rootLayout(root), parseMainConfig(JSON.stringify({ protocols })));
}

describe('door access', () => {
  it('closes the queues of a namespace with a token, by the part of the name before the first dot', () => {
    const ns = namespaces({ lmstfy: { port: 1, tokens: { nsB: ['t-0123456789'] } } });
    expect(['nsB.xd', 'nsB.a.b', 'nsB.'].map((q) => ns.isProtected(q))).toEqual([true, true, true]);
    expect(['nsBB.xd', 'nsb.xd', 'x.nsB.xd', 'nsB', 'other.q'].map((q) => ns.isProtected(q))).toEqual([false, false, false, false, false]);
  });

  it('follows the live token table: a minted token closes, revoking the last one opens', () => {
    const ns = namespaces({ lmstfy: { port: 1, tokens: { nsB: ['t-0123456789'] } } });
    const { tokens } = ns.lmstfy();
    expect(ns.isProtected('nsC.q')).toBe(false);
    tokens.add('nsC', 'minted-0123456789abcdef', 'd');
    expect(ns.isProtected('nsC.q')).toBe(true);
    tokens.remove('nsC', 'minted-0123456789abcdef');
    expect(ns.isProtected('nsC.q')).toBe(false);
    tokens.remove('nsB', 't-0123456789');
    expect(ns.isProtected('nsB.q')).toBe(false);
  });

  it('protects nothing without an lmstfy section, or with auth false', () => {
    expect(namespaces({ cloudq: { port: 1 } }).isProtected('nsB.xd')).toBe(false);
    expect(namespaces({ lmstfy: { port: 1, auth: false, tokens: { nsB: ['t-0123456789'] } } }).isProtected('nsB.xd')).toBe(false);
    expect(() => namespaces({ cloudq: { port: 1 } }).lmstfy()).toThrow(/protocols\.lmstfy/);
  });

  it('opens a protected queue to a door whose patterns match its whole name; * is any run of characters', () => {
    const ns = namespaces({ lmstfy: { port: 1, tokens: { nsB: ['t'], nsE: ['t'] } } });
    const may = doorAccess(ns, parseQueuePatterns('cloudq', ['nsB.*', 'nsE.a$(x)+', 'nsE.b.c']));
    expect(['nsB.xd', 'nsB.', 'nsB.a.b', 'nsE.a$(x)+', 'nsE.b.c', 'open.q'].map(may)).toEqual([true, true, true, true, true, true]);
    expect(['nsE.a', 'nsE.axx', 'nsE.a$(x)', 'nsE.a$(x)++', 'nsE.bxc', 'nsE.b.cd'].map(may)).toEqual([false, false, false, false, false, false]);
    expect(doorAccess(ns, parseQueuePatterns('rqms', ['*']))('nsB.xd')).toBe(true);
    expect(doorAccess(ns, parseQueuePatterns('rqms', ['*.xd']))('nsB.xy')).toBe(false);
    expect(doorAccess(ns, parseQueuePatterns('workq', undefined))('nsB.xd')).toBe(false);
  });

  it('refuses a bad queues value with RQ_CONFIG naming the door', () => {
    for (const bad of ['nsB.*', {}, [1], [''], ['a/b'], ['x'.repeat(256)]]) {
      expect(() => parseQueuePatterns('workq', bad), JSON.stringify(bad)).toThrow(
        expect.objectContaining({ code: 'RQ_CONFIG', message: expect.stringContaining('"protocols.workq.queues" must be an array of queue name patterns') }),
      );
    }
  });
});
