/**
 * The messages between rq-mgr and a host process (queue/host-main.ts), over the IPC
 * channel rq-mgr starts it with. rq-mgr asks a host to open a queue (take its lock, serve
 * its socket) or to close one (stop serving it and let go of its lock); the host answers
 * each, and says when a queue it served is gone of itself (a `shutdown` command), which
 * rq-mgr takes as that queue's exit.
 */

export type ToHost = { t: 'open'; queue: string } | { t: 'close'; queue: string };

export type FromHost =
  | { t: 'opened'; queue: string }
  | { t: 'refused'; queue: string; reason: string }
  | { t: 'closed'; queue: string }
  | { t: 'gone'; queue: string };
