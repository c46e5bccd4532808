/**
 * What rq-mgr notices in its root without `reload`: a queue directory made by hand (it
 * starts serving it once its `config.json` is in place and has stopped changing), and a
 * changed `config/config.json` (a front door added or moved: the web process is started
 * anew). chokidar watches `queues/` itself, one level only, and a new queue directory
 * until its config appears: never the directories of running queues, whose que index
 * changes with every commit, so no queue's traffic wakes rq-mgr.
 */
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { isValidQueueName } from '../domain/names.js';
import type { Logger } from '../lib/logger.js';
import type { RootLayout } from '../store/layout.js';

/** A file counts as written once its size has not changed for this long. */
const SETTLED_MS = 200;

export interface RootEvents {
  /** Is this queue known to rq-mgr already (running, restarting or being deleted)? */
  has(queue: string): boolean;
  /** A queue directory with its config.json appeared. */
  newQueue(queue: string): void;
  /** config/config.json changed. */
  mainConfigChanged(): void;
}

export class RootWatch {
  private readonly root: RootLayout;
  private readonly events: RootEvents;
  private readonly log: Logger;
  private readonly watchers: FSWatcher[] = [];
  /** New queue directories waiting for their config.json. */
  private readonly pending: FSWatcher;

  constructor(root: RootLayout, events: RootEvents, log: Logger) {
    this.root = root;
    this.events = events;
    this.log = log;
    const settled = { stabilityThreshold: SETTLED_MS, pollInterval: 50 };
    this.pending = watch([], { depth: 0, ignoreInitial: false, awaitWriteFinish: settled });
    this.pending.on('add', (file) => {
      if (path.basename(file) !== 'config.json') return;
      const dir = path.dirname(file);
      void this.pending.unwatch(dir);
      this.found(path.basename(dir));
    });
    const queues = watch(root.queuesDir, { depth: 0, ignoreInitial: true });
    queues.on('addDir', (dir) => {
      const name = path.basename(dir);
      if (dir !== root.queuesDir && isValidQueueName(name) && !events.has(name)) this.pending.add(dir);
    });
    queues.on('unlinkDir', (dir) => void this.pending.unwatch(dir));
    const config = watch(root.mainConfig, { ignoreInitial: true, awaitWriteFinish: settled });
    config.on('change', () => events.mainConfigChanged());
    config.on('add', () => events.mainConfigChanged());
    for (const w of [this.pending, queues, config]) {
      w.on('error', (e) => log.warn({ err: e instanceof Error ? e.message : String(e) }, 'root watch failed; `rq-mgr reload` still picks up changes'));
      this.watchers.push(w);
    }
  }

  private found(name: string): void {
    if (this.events.has(name)) return;
    this.log.info({ queue: name }, 'new queue directory found');
    this.events.newQueue(name);
  }

  close(): Promise<void> {
    return Promise.all(this.watchers.map((w) => w.close())).then(() => undefined);
  }
}
