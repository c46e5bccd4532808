/**
 * Directories made ahead for new messages. A message's id holds the inode number of the
 * directory it is made in (`prep/_<pid>.<n>`, renamed into its state when it commits), so
 * every create needs a new directory before anything else of it can be written, and a
 * new file for its `msg`. Making an inode is the dearest step of a create here (0.1 to
 * 0.3 ms each, more for minutes after many files were deleted); made ahead in the thread
 * pool, the directory and an empty `msg` in it cost a create's reply nothing, and the
 * create writes into the file that is there.
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
  /**
   * A new directory in `prep/` for an id stamped `stamp`: one made ahead, else one made
   * now. Ids of one millisecond sort by their inode, so of those made ahead the one with
   * the lowest inode above the last one given for `stamp` is taken: messages created one
   * after the other keep their order in `que`.
   */
  take(stamp: string): SpareDir;
  /** Remove the ones made ahead; none is made after this. */
  close(): void;
}

export function createSpareDirs(prepDir: string): SpareDirs {
  const ready: SpareDir[] = [];
  let making = 0;
  let seq = 0;
  let closed = false;
  let last = { stamp: '', ino: -1 };
  const name = (): string => path.join(prepDir, `_${process.pid}.${seq++}`);

  function makeAhead(): void {
    while (!closed && ready.length + making < KEEP) {
      making++;
      const dir = name();
      const dropped = (): void => void fs.rm(dir, { recursive: true, force: true }, () => undefined);
      fs.mkdir(dir, (e) => {
        if (e) {
          making--;
          return; // a full disk, say: the next take makes its own, and says why
        }
        fs.writeFile(path.join(dir, 'msg'), '', (e2) => {
          fs.stat(dir, (e3, st) => {
            making--;
            if (closed || e2 || e3) dropped();
            else ready.push({ dir, ino: st.ino });
          });
        });
      });
    }
  }

  return {
    take(stamp) {
      const floor = stamp === last.stamp ? last.ino : -1;
      let best = -1;
      for (const [i, r] of ready.entries()) if (r.ino > floor && (best < 0 || r.ino < ready[best]!.ino)) best = i;
      let spare = best >= 0 ? ready.splice(best, 1)[0] : undefined;
      if (!spare) {
        const dir = name();
        fs.mkdirSync(dir);
        spare = { dir, ino: fs.statSync(dir).ino };
      }
      last = { stamp, ino: spare.ino };
      makeAhead();
      return spare;
    },
    close() {
      closed = true;
      for (const { dir } of ready.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
