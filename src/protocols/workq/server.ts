/**
 * The Workq front door (docs/doors/workq.md): a TCP server in the web process. Its parts, in
 * this folder: the codec (decoder.ts, requests.ts, arguments.ts, replies.ts), the state the
 * handlers share (door.ts), one handler per command, named by its wire name (add.ts also
 * serves `schedule`, complete.ts also `fail`), the handler and error tables (answer.ts),
 * and the connection loop (connection.ts). This file builds the server from the section
 * and the door.
 *
 * A queue in a token-protected lmstfy namespace that the section's `queues` patterns do
 * not name is closed to this door (door-access.ts), as a name it may not use: `add`,
 * `schedule`, `run` and `lease` naming one are `Invalid Name` (and such a name is never
 * recorded); a job in one is absent (`-NOT-FOUND`) to the commands by id; `inspect
 * queues` leaves it out and `inspect queue`, `jobs` and `scheduled-jobs` answer
 * `-NOT-FOUND`, as for a queue that does not exist.
 */
import net from 'node:net';
import type { ProtocolContext } from '../context.js';
import { parseWorkqSection } from './config.js';
import { serveConnection } from './connection.js';
import { WorkqDoor } from './door.js';

export function workqServer(ctx: ProtocolContext): net.Server {
  const options = parseWorkqSection(ctx.section.raw);
  const door = new WorkqDoor(ctx, options);
  // What the queue processes counted before this door started is not ours.
  void door.noteAllStats();
  // Half-open: a client that sends its commands and shuts its side still gets every reply.
  return net.createServer({ allowHalfOpen: true }, (socket) => serveConnection(socket, door, options));
}
