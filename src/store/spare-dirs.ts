/**
 * Directories made ahead for new messages. A message's id holds the inode number of the
 * directory it is made in (`prep/_<pid>.<n>`, renamed into its state when it commits), so
 * every create needs a new directory before anything else of it can be written. A mkdir
 * and its stat cost a create about 0.1 ms on the way of its reply here; made ahead, in
 * the thread pool while the queue is busy with other things, they cost it nothing.
 *
 * A few are kept ready once the queue has made a message (an idle queue keeps none), and
 * removed when the queue is put away or stops; a crash leaves them in `prep/`, where
 * start-up removes every `_*` name (message-store.ts `sweepPrep`).
 */
import fs from 'node:fs';
import path from 'node:path';

/** How many are kept ready. */
const KEEP = 8;

export interface SpareDir {
  dir: string;
  ino: number;
}

export interface SpareDirs {
  /** A new directory in `prep/`: one made ahead, else one made now. */
  take(): SpareDir;
  /** Remove the ones made ahead; none is made after this. */
  close(): void;
}

export function createSpareDirs(prepDir: string): SpareDirs {
  const ready: SpareDir[] = [];
  let making = 0;
  let seq = 0;
  let closed = false;
  const name = (): string => path.join(prepDir, `_${process.pid}.${seq++}`);

  function makeAhead(): void {
    while (!closed && ready.length + making < KEEP) {
      making++;
      const dir = name();
      fs.mkdir(dir, (e) => {
        if (e) {
          making--;
          return; // a full disk, say: the next take makes its own, and says why
        }
        fs.stat(dir, (e2, st) => {
          making--;
          if (closed || e2) fs.rmdir(dir, () => undefined);
          else ready.push({ dir, ino: st.ino });
        });
      });
    }
  }

  return {
    take() {
      let spare = ready.pop();
      if (!spare) {
        const dir = name();
        fs.mkdirSync(dir);
        spare = { dir, ino: fs.statSync(dir).ino };
      }
      makeAhead();
      return spare;
    },
    close() {
      closed = true;
      for (const { dir } of ready.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
