/**
 * What kind of queue each queue is, for the dashboard: built-in (rq ships it), script
 * (it runs a script), or pull (no script: external workers lease its messages), and for
 * a pull queue the front door that made it (config.json's `door`; "pull" when none is
 * recorded) and its group on the overview (lmstfy's `<namespace>.<queue>` by namespace).
 * A queue's kind is read from its config.json once and kept while the file's inode, size
 * and mtime stay the same, so the overview costs one stat per queue, not one read.
 */
import fs from 'node:fs';
import { isPlainObject } from '../domain/message.js';
import { normaliseQueueConfig } from '../domain/queue-config.js';
import type { ProtocolName } from '../domain/main-config.js';
import { queueLayout, type RootLayout } from '../store/layout.js';
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
  const config = isPlainObject(raw) ? normaliseQueueConfig(raw) : undefined;
  if (config === undefined || config.script !== '') return { kind: 'script', door: null, group: 'script queues', order: '1' };
  const door = config.door;
  if (door === 'lmstfy') {
    const ns = name.slice(0, Math.max(0, name.indexOf('.')));
    return { kind: 'pull', door, group: `lmstfy namespace ${ns}`, order: `2 lmstfy ${ns}` };
  }
  return { kind: 'pull', door, group: `${door ?? 'pull'} queues`, order: `2 ${door ?? ''}` };
}

/** The kinds of the queues of one install, remembered per config.json (see the file comment). */
export class QueueKinds {
  private readonly root: RootLayout;
  private readonly known = new Map<string, { key: string; kind: QueueKind }>();

  constructor(root: RootLayout) {
    this.root = root;
  }

  /** The kind of each of these queues; the ones no longer named are forgotten. */
  of(names: readonly string[]): Map<string, QueueKind> {
    const out = new Map<string, QueueKind>();
    for (const name of names) out.set(name, this.one(name));
    if (this.known.size > out.size) for (const name of this.known.keys()) if (!out.has(name)) this.known.delete(name);
    return out;
  }

  /** The kind of one queue. */
  one(name: string): QueueKind {
    const file = queueLayout(this.root, name).configFile;
    const st = fs.statSync(file, { throwIfNoEntry: false });
    const key = st === undefined ? '' : `${st.ino}:${st.size}:${st.mtimeMs}`;
    const seen = this.known.get(name);
    if (seen !== undefined && seen.key === key) return seen.kind;
    let text: string | undefined;
    try {
      text = st === undefined ? undefined : fs.readFileSync(file, 'utf8');
    } catch {
      text = undefined;
    }
    const kind = kindOf(name, text);
    this.known.set(name, { key, kind });
    return kind;
  }
}
