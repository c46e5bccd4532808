/**
 * The handlers of the lmstfy door's /api routes: publish (one job, a bulk of them, or
 * a job in place of another), consume, ack, peek, size, destroy, and the dead letters.
 * Each is called after the route's gate (lmstfy.ts: names, pool, token) with what it
 * needs, makes its own checks in the order lmstfy makes them, and answers with
 * a Reply. Every change is a PullClient call to the queue's process.
 */
import type http from 'node:http';
import { ulid } from 'ulid';
import { RqError } from '../domain/errors.js';
import { attributesProblem } from '../domain/message.js';
import { isProtocolQueueName, MAX_QUEUE_NAME } from '../domain/names.js';
import { abortableSleep } from '../lib/abortable-sleep.js';
import { readBytes } from './lmstfy-body.js';
import {
  fail,
  isReply,
  jobIdOf,
  jobObject,
  jobRef,
  LIMITS,
  parseConsumeQuery,
  parseDeleteDeadQuery,
  parseJobAttributes,
  parsePublishQuery,
  parseRespawnQuery,
  rqQueue,
  splitJsonArray,
  type PublishQuery,
  type Reply,
} from './lmstfy-wire.js';
import type { PullClient, PulledJob } from './pull-client.js';

/** A bulk body may hold 64 jobs of 65,535 bytes, plus room for separators and white space. */
const BULK_BODY_BYTES = 8 * 1024 * 1024;
/**
 * The longest consume wait, in ms: a uint32 `timeout` may ask for 136 years, but Node's
 * timers (here and in the queue process) hold at most 2^31−1 ms; past about 23 days the
 * consumer gets its 404 and asks again.
 */
const MAX_WAIT_MS = 2_000_000_000;
/** A respawn `ttl` beyond uint32 seconds (136 years) is taken as that. */
const MAX_RESPAWN_TTL_S = LIMITS.uint32;

export class LmstfyApi {
  private readonly client: PullClient;

  constructor(client: PullClient) {
    this.client = client;
  }

  /** `PUT /api/:ns/:q?delay&ttl&tries`: publish the body as one job. */
  async publish(req: http.IncomingMessage, res: http.ServerResponse, ns: string, q: string, query: URLSearchParams): Promise<Reply> {
    const job = await this.readJob(req, res, query);
    if (isReply(job)) return job;
    const jobId = await this.publishOne(rqQueue(ns, q), job.body, job.query, job.attributes);
    return { status: 201, body: { msg: 'published', job_id: jobId } };
  }

  /**
   * `PUT /api/:ns/:q/job/:id`: every check first, then acknowledge the old job and
   * publish the body as a new one. The new job keeps the old one's attributes, and those
   * of a versioned republish are added to them (a name given again takes the new value).
   */
  async republish(req: http.IncomingMessage, res: http.ServerResponse, ns: string, q: string, oldId: string, query: URLSearchParams): Promise<Reply> {
    const job = await this.readJob(req, res, query);
    if (isReply(job)) return job;
    const rq = rqQueue(ns, q);
    const ref = jobRef(oldId);
    const kept = ref === undefined ? null : ((await this.client.peek(rq, ref))?.attributes ?? null);
    const attributes = kept === null ? job.attributes : { ...kept, ...job.attributes };
    const problem = attributes === undefined ? undefined : attributesProblem(attributes);
    if (problem !== undefined) return fail(400, problem);
    await this.ackQuietly(rq, oldId);
    const jobId = await this.publishOne(rq, job.body, job.query, attributes);
    return { status: 201, body: { msg: 'published', job_id: jobId } };
  }

  /** The query, attribute (header) and body checks of a publish, in order. */
  private async readJob(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    query: URLSearchParams,
  ): Promise<{ query: PublishQuery; attributes: Record<string, string> | undefined; body: Buffer } | Reply> {
    const parsed = parsePublishQuery(query);
    if (isReply(parsed)) return parsed;
    const attributes = parseJobAttributes(req.headersDistinct);
    if (isReply(attributes)) return attributes;
    const body = await readBytes(req, res, LIMITS.jobBytes);
    return isReply(body) ? body : { query: parsed, attributes, body };
  }

  /** `PUT /api/:ns/:q/bulk`: each element's raw JSON text is a job, published in order, each with the attributes of the headers. */
  async bulkPublish(req: http.IncomingMessage, res: http.ServerResponse, ns: string, q: string, query: URLSearchParams): Promise<Reply> {
    const parsed = parsePublishQuery(query);
    if (isReply(parsed)) return parsed;
    const attributes = parseJobAttributes(req.headersDistinct);
    if (isReply(attributes)) return attributes;
    const body = await readBytes(req, res, BULK_BODY_BYTES);
    if (isReply(body)) return body;
    const jobs = splitJsonArray(body);
    if (!jobs) return fail(400, 'request body should be an array of objects');
    if (jobs.length === 0) return fail(400, 'no jobs');
    if (jobs.length > LIMITS.bulkJobs) return fail(400, 'too many jobs');
    if (jobs.some((j) => j.length > LIMITS.jobBytes)) return fail(413, 'job too large');
    const rq = rqQueue(ns, q);
    const ids: string[] = [];
    for (const job of jobs) ids.push(await this.publishOne(rq, job, parsed, attributes));
    return { status: 201, body: { msg: 'published', job_ids: ids } };
  }

  private async publishOne(rq: string, body: Buffer, p: PublishQuery, attributes: Record<string, string> | undefined): Promise<string> {
    const jobId = ulid();
    await this.client.publish(rq, {
      src: 'lmstfy',
      payload: body,
      ext_id: jobId,
      delay_ms: p.delayS * 1000,
      ...(p.ttlS > 0 ? { ttl_ms: p.ttlS * 1000 } : {}),
      tries: p.tries,
      requeue: 'tail',
      ...(attributes !== undefined ? { attributes } : {}),
    });
    return jobId;
  }

  /**
   * `GET /api/:ns/:q1[,q2…]?ttr&timeout&count`. PullClient.lease does the picking
   * (listed order among ready jobs, then the first to arrive anywhere); a client that
   * goes away ends the wait, and a job leased for it in that instant is handed back.
   */
  async consume(res: http.ServerResponse, ns: string, queuePart: string, query: URLSearchParams): Promise<Reply | undefined> {
    const c = parseConsumeQuery(query, queuePart);
    if (isReply(c)) return c;
    // A listed name whose rq queue cannot exist (too long) can never hold a job.
    const shownAs = new Map<string, string>();
    for (const q of c.queues) {
      const rq = rqQueue(ns, q);
      if (rq.length <= MAX_QUEUE_NAME && isProtocolQueueName(rq)) shownAs.set(rq, q);
    }
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort();
    });
    const waitMs = Math.min(c.timeoutS * 1000, MAX_WAIT_MS);
    let jobs: PulledJob[] = [];
    if (shownAs.size > 0) {
      jobs = await this.client.lease([...shownAs.keys()], {
        owner: 'lmstfy',
        ttr_ms: c.ttrS * 1000,
        count: c.count,
        wait_ms: waitMs,
        signal: gone.signal,
        create: c.timeoutS > 0,
      });
    } else {
      await abortableSleep(waitMs, gone.signal);
    }
    // The client went away (the client refunded what it had leased).
    if (gone.signal.aborted) return undefined;
    if (jobs.length === 0) return { status: 404, body: { msg: 'no job available' } };
    const now = Date.now();
    const shown = jobs.map((job) => ({ msg: 'new job', ...jobObject(job, ns, shownAs.get(job.queue) ?? job.queue.slice(ns.length + 1), now) }));
    return { status: 200, body: c.count === 1 ? shown[0] : shown };
  }

  /** `DELETE /api/:ns/:q/job/:id`: always 204. */
  async ack(rq: string, jobId: string): Promise<Reply> {
    await this.ackQuietly(rq, jobId);
    return { status: 204 };
  }

  /** Acknowledge a job if this queue has it; an unknown (or malformed) id is no error. */
  private async ackQuietly(rq: string, jobId: string): Promise<void> {
    const ref = jobRef(jobId);
    if (ref === undefined) return;
    try {
      await this.client.ack(rq, ref);
    } catch (e) {
      if (e instanceof RqError && (e.code === 'RQ_NOT_FOUND' || e.code === 'RQ_NOT_IN_STATE')) return;
      throw e;
    }
  }

  /** `GET /api/:ns/:q/peek`: the job the next consume would get, not consumed. */
  async peekHead(ns: string, q: string): Promise<Reply> {
    const job = await this.client.peek(rqQueue(ns, q));
    if (!job) return fail(404, 'job not found');
    return { status: 200, body: jobObject(job, ns, q) };
  }

  /** `GET /api/:ns/:q/job/:id`: a job of this queue in any state but gone. */
  async peekJob(ns: string, q: string, jobId: string): Promise<Reply> {
    const ref = jobRef(jobId);
    const job = ref === undefined ? null : await this.client.peek(rqQueue(ns, q), ref);
    if (!job || job.state === 'done') return fail(404, 'job not found');
    return { status: 200, body: jobObject(job, ns, q) };
  }

  /** `GET /api/:ns/:q/size` (public): jobs ready now. */
  async size(ns: string, q: string): Promise<Reply> {
    const stats = await this.client.stats(rqQueue(ns, q));
    return { status: 200, body: { namespace: ns, queue: q, size: stats.ready } };
  }

  /** `DELETE /api/:ns/:q`: every ready job goes; delayed, in-flight and dead ones stay. */
  async destroy(rq: string): Promise<Reply> {
    await this.client.purgeReady(rq);
    return { status: 204 };
  }

  /** `GET /api/:ns/:q/deadletter`. */
  async deadLetterInfo(ns: string, q: string): Promise<Reply> {
    const dl = await this.client.deadLetter(rqQueue(ns, q));
    return { status: 200, body: { namespace: ns, queue: q, deadletter_size: dl.size, deadletter_head: dl.head ? jobIdOf(dl.head) : '' } };
  }

  /** `GET /api/:ns/:q/deadletter/size` (public). */
  async deadLetterSize(ns: string, q: string): Promise<Reply> {
    const dl = await this.client.deadLetter(rqQueue(ns, q));
    return { status: 200, body: { namespace: ns, queue: q, size: dl.size } };
  }

  /** `PUT /api/:ns/:q/deadletter?limit&ttl`: respawn the oldest dead jobs to the tail, with 1 try. */
  async respawn(rq: string, query: URLSearchParams): Promise<Reply> {
    const q = parseRespawnQuery(query);
    if (isReply(q)) return q;
    const count = await this.client.respawn(rq, q.limit, Math.min(q.ttl, MAX_RESPAWN_TTL_S) * 1000);
    return { status: 200, body: { msg: 'respawned', count } };
  }

  /** `DELETE /api/:ns/:q/deadletter?limit`: delete the oldest dead jobs for good. */
  async deleteDead(rq: string, query: URLSearchParams): Promise<Reply> {
    const q = parseDeleteDeadQuery(query);
    if (isReply(q)) return q;
    await this.client.deadLetter(rq, { delete: q.limit });
    return { status: 204 };
  }
}
