/**
 * rq-mgr's host processes (queue/host-main.ts), each serving many queues: which host
 * serves which queue, the IPC with them (rpc/host-api.ts), and where a queue goes: to the
 * first host that serves fewer than `perHost` queues, else to a new host. A host is
 * started when the first queue is put on it, and is not restarted by itself: when one
 * dies, each of its queues ends (as a queue process of its own would exit), and the
 * supervisor's restart policy opens them again, on a host with room.
 *
 * Each `open` ends exactly once, through `ended`: refused (exit code 1), closed when
 * asked or gone of itself (code 0), or with its host (the host's code and signal).
 */
import type { ChildProcess } from 'node:child_process';
import type { FromHost, ToHost } from '../rpc/host-api.js';

interface HostProc {
  id: number;
  child: ChildProcess;
  /** The queues it serves, or is opening. */
  queues: Set<string>;
  /** Opens not answered yet: each resolves with the refusal, or undefined once it serves. */
  opening: Map<string, (refused: string | undefined) => void>;
  exited: Promise<void>;
}

export interface HostsOptions {
  /** Start host number `id` with an IPC channel. */
  spawn: (id: number) => ChildProcess;
  /** A queue's serving has ended: it was refused, closed, gone, or its host died. */
  ended: (queue: string, code: number | null, signal: NodeJS.Signals | null) => void;
  /** How many queues a host serves at most. */
  perHost: number;
}

export class Hosts {
  private readonly o: HostsOptions;
  private readonly hosts: HostProc[] = [];
  private nextId = 1;

  constructor(o: HostsOptions) {
    this.o = o;
  }

  /** Open `queue` on a host: resolves once it serves (undefined) or with why it was refused. */
  open(queue: string): Promise<string | undefined> {
    const under = this.hostOf(queue);
    const waiting = under?.opening.get(queue);
    if (under && waiting) {
      // An open under way: answer with it.
      return new Promise((resolve) =>
        under.opening.set(queue, (refused) => {
          waiting(refused);
          resolve(refused);
        }),
      );
    }
    const host = under ?? this.hosts.find((h) => h.queues.size < this.o.perHost && h.child.connected) ?? this.start();
    host.queues.add(queue);
    return new Promise((resolve) => {
      host.opening.set(queue, resolve);
      this.send(host, { t: 'open', queue });
    });
  }

  /** Ask the host of `queue` to stop serving it; `ended` follows once it has. */
  close(queue: string): void {
    const host = this.hostOf(queue);
    if (host) this.send(host, { t: 'close', queue });
  }

  /** SIGHUP every host: each reads the configs of its queues again. */
  reload(): void {
    for (const h of this.hosts) h.child.kill('SIGHUP');
  }

  /** TERM every host and wait until each has exited. */
  async stop(): Promise<void> {
    const exits = this.hosts.map((h) => h.exited);
    for (const h of this.hosts) h.child.kill('SIGTERM');
    await Promise.all(exits);
  }

  private hostOf(queue: string): HostProc | undefined {
    return this.hosts.find((h) => h.queues.has(queue));
  }

  private send(host: HostProc, m: ToHost): void {
    if (host.child.connected) host.child.send(m, () => undefined);
  }

  private start(): HostProc {
    const id = this.nextId++;
    const child = this.o.spawn(id);
    const host: HostProc = { id, child, queues: new Set(), opening: new Map(), exited: Promise.resolve() };
    host.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.hosts.splice(this.hosts.indexOf(host), 1);
        for (const queue of host.queues) this.end(host, queue, code ?? 1, signal, `its host process exited (${signal ?? `code ${String(code)}`})`);
        resolve();
      });
    });
    child.on('message', (m: FromHost) => this.onMessage(host, m));
    this.hosts.push(host);
    return host;
  }

  private onMessage(host: HostProc, m: FromHost): void {
    if (!host.queues.has(m.queue)) {
      // Opened for nobody (its serving ended meanwhile): it must not stay served unseen.
      if (m.t === 'opened') this.send(host, { t: 'close', queue: m.queue });
      return;
    }
    switch (m.t) {
      case 'opened':
        host.opening.get(m.queue)?.(undefined);
        host.opening.delete(m.queue);
        return;
      case 'refused':
        return this.end(host, m.queue, 1, null, m.reason);
      case 'closed':
      case 'gone':
        return this.end(host, m.queue, 0, null, 'closed');
    }
  }

  /** The serving of `queue` on `host` has ended: an open waiting for its answer gets `why`. */
  private end(host: HostProc, queue: string, code: number | null, signal: NodeJS.Signals | null, why: string): void {
    host.queues.delete(queue);
    host.opening.get(queue)?.(why);
    host.opening.delete(queue);
    this.o.ended(queue, code, signal);
  }
}
