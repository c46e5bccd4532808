/**
 * What kind of queue each queue is, for the dashboard: built-in (rq ships it), script
 * (it runs a script), or pull (no script: external workers lease its messages), and for
 * a pull queue the front door that made it (config.json's `door`; "pull" when none is
 * recorded) and its group on the overview (lmstfy's `<namespace>.<queue>` by namespace).
 * A queue's kind is read from its config.json once and kept while the file's inode, size
 * and mtime stay the same. The overview checks that at most once every RECHECK_MS (30 s) per queue
 * (a kind changes only when a config is edited by hand, or a queue deleted and made
 * again), so with thousands of queues most overviews cost no file access for kinds; a
 * queue's own page checks its file each time.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ProtocolName } from '../domain/main-config.js';
import { isPlainObject } from '../domain/message.js';
import { doorOf, scriptOf } from '../domain/queue-config.js';
import type { RootLayout } from '../store/layout.js';
import { isBuiltinQueue } from './gateway.js';

export const KINDS = ['script', 'pull', 'builtin'] as const;
export type Kind = (typeof KINDS)[number];

export interface QueueKind {
  kind: Kind;
  /** The pull front door that made the queue; null for other queues and old pull queues. */
  door: ProtocolName | null;
  /** The overview's group: its label, and its place (groups are shown in `order`'s order). */
  group: string;
  order: string;
}

/** The kind of queue `name` from its config.json text (undefined when it cannot be read: a script queue, as RQ would take it). */
export function kindOf(name: string, configText: string | undefined): QueueKind {
  if (isBuiltinQueue(name)) return { kind: 'builtin', door: null, group: 'built-in', order: '3' };
  let raw: unknown;
  try {
    raw = configText === undefined ? undefined : JSON.parse(configText);
  } catch {
    raw = undefined;
  }
  // Only the two keys that say the kind are read (a whole normalisation per queue costs more, with thousands).
  if (!isPlainObject(raw) || scriptOf(raw) !== '') return { kind: 'script', door: null, group: 'script queues', order: '1' };
  const door = doorOf(raw);
  if (door === 'lmstfy') {
    const ns = name.slice(0, Math.max(0, name.indexOf('.')));
    return { kind: 'pull', door, group: `lmstfy namespace ${ns}`, order: `2 lmstfy ${ns}` };
  }
  return { kind: 'pull', door, group: `${door ?? 'pull'} queues`, order: `2 ${door ?? ''}` };
}

/** How long the overview takes a queue's kind as known without looking at its config.json again. */
const RECHECK_MS = 30_000;

/** The kinds of the queues of one install, remembered per config.json (see the file comment). */
export class QueueKinds {
  private readonly root: RootLayout;
  private readonly known = new Map<string, { key: string; kind: QueueKind; checked: number }>();

  constructor(root: RootLayout) {
    this.root = root;
  }

  /** The kind of each of these queues (checked as the file comment says); the ones no longer named are forgotten. */
  of(names: readonly string[]): Map<string, QueueKind> {
    const now = Date.now();
    const out = new Map<string, QueueKind>();
    for (const name of names) {
      const seen = this.known.get(name);
      out.set(name, seen !== undefined && now - seen.checked < RECHECK_MS ? seen.kind : this.one(name));
    }
    if (this.known.size > out.size) for (const name of this.known.keys()) if (!out.has(name)) this.known.delete(name);
    return out;
  }

  /** The kind of one queue, its config.json checked now. */
  one(name: string): QueueKind {
    const file = path.join(this.root.queuesDir, name, 'config.json');
    const st = fs.statSync(file, { throwIfNoEntry: false });
    const key = st === undefined ? '' : `${st.ino}:${st.size}:${st.mtimeMs}`;
    const seen = this.known.get(name);
    let kind = seen?.key === key ? seen.kind : undefined;
    if (kind === undefined) {
      let text: string | undefined;
      try {
        text = st === undefined ? undefined : fs.readFileSync(file, 'utf8');
      } catch {
        text = undefined;
      }
      kind = kindOf(name, text);
    }
    this.known.set(name, { key, kind, checked: Date.now() });
    return kind;
  }
}
