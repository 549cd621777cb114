import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { FinishCounts, GlobalPolicy, InstanceId, RouteDecision, Tokens } from '../core/types.ts';
import { SseSplitter } from '../text/sse.ts';
import { carriesOutput, StreamAggregator, type UpstreamChunk } from './aggregate.ts';
import type { FinalReport } from './dialects.ts';
import { sendError } from './errors.ts';
import { AttemptFeedback, cachedTokensEviction } from './feedback.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { Replica, ReplicaSet } from './replicas.ts';
import { requestResending } from './upstream-request.ts';
import type { CompletionBody } from './validate.ts';

export type RouteKind = 'completions' | 'chat';

export interface Timeouts {
  readonly firstTokenSeconds: number;
  readonly idleSeconds: number;
  readonly requestSeconds: number;
  /** Prefill/decode disaggregation: the whole prefill leg (its one-token answer). Default 120. */
  readonly prefillSeconds?: number;
}

export interface ForwardContext {
  readonly replicas: ReplicaSet;
  readonly metrics: GatewayMetrics;
  readonly now: () => number;
  /** Gateway seconds per wall-clock second (the replicas' `--time-scale`); engines report wall-clock times. */
  readonly timeScale: number;
  readonly timeouts: Timeouts;
  /** Live advice: told of every finished request (advice/advisor.ts); absent: advice is off. */
  readonly advisor?: { finished(model: string, counts: FinishCounts, at: number): void } | undefined;
}

/** One try of a request on one replica, as the policy routed it. */
export interface Attempt {
  readonly kind: RouteKind;
  /** The policy's id for this try. */
  readonly id: string;
  readonly body: CompletionBody;
  /** The prompt as the policy routed it (the gateway's tokens). */
  readonly tokens: Tokens;
  readonly promptTokens: number;
  readonly arrival: number;
  /** The policy of the model's pool, which routed this try and hears its outcome. */
  readonly policy: GlobalPolicy;
  readonly decision: RouteDecision;
  readonly replica: Replica;
  /** Aborts when the client goes away or the gateway shuts down (the reason says which). */
  readonly cancel: AbortSignal;
  /**
   * Replicas the request's earlier tries failed on or were refused by as too long: routing avoided
   * them, and so does a decode replica picked at KV-ready.
   */
  readonly avoid?: readonly InstanceId[];
  /** Told once, at the first chunk carrying output (the decode leg of a disaggregated request). */
  readonly onFirstToken?: (now: number, chunk: FinalReport) => void;
}

export type AttemptOutcome =
  /** The client has its answer: a success, the replica's own 4xx, or a stream ended by an error event. */
  | { readonly kind: 'answered'; readonly ok: boolean }
  /** The replica failed before anything reached the client: another replica may try. */
  | {
      readonly kind: 'retryable';
      readonly status: number;
      readonly message: string;
      readonly code: string;
      /** The error code in the replica's own answer, when it gave one. */
      readonly upstreamCode?: string | undefined;
      /** The replica's own HTTP status, when it answered one (429: back-pressure, not a fault). */
      readonly upstreamStatus?: number;
      /** False: the routed (prefill) replica did nothing wrong; a retry may route there again. */
      readonly avoid?: boolean;
      /**
       * The replica refused the prompt as longer than it can hold, and a replica of its pool and role
       * that takes longer requests is present (`lengthLimit`): the retry avoids every replica no larger,
       * at once.
       */
      readonly tooLong?: boolean;
      /** With `tooLong`: the replica that refused (the decode replica of a disaggregated request's decode leg). */
      readonly refusedBy?: InstanceId;
    }
  /** The attempt was cancelled (client gone, shutdown); what to tell the client is the caller's call. */
  | { readonly kind: 'cancelled' };

/** Why the gateway itself aborted an upstream request. */
class UpstreamTimeout extends Error {}

/** The replica sent an error event inside its stream before the answer was complete. */
class UpstreamStreamError extends Error {}

/**
 * Forward one attempt and feed the outcome back: the policy hears exactly one finish or failure,
 * the breaker hears replica faults (never a client's 4xx), the in-flight counts return to where
 * they were. Nothing is written to the client until the replica has produced something, so a
 * replica that fails before its first token leaves the request free to be retried elsewhere.
 */
export async function forward(a: Attempt, reply: FastifyReply, ctx: ForwardContext): Promise<AttemptOutcome> {
  const { replica } = a;
  const label = String(replica.id);
  // The replica always streams (so the first token's time is known); a client that did not ask for a
  // stream gets the chunks gathered into one answer. Timeouts keep their meaning for the client.
  const stream = a.body.stream === true;
  const upstream = new AbortController();
  const onCancel = () => upstream.abort(a.cancel.reason);
  if (a.cancel.aborted) onCancel();
  else a.cancel.addEventListener('abort', onCancel, { once: true });
  const waitSeconds = stream ? ctx.timeouts.firstTokenSeconds : ctx.timeouts.requestSeconds;
  const firstTokenTimer = setTimeout(
    () => upstream.abort(new UpstreamTimeout(stream ? 'first token' : 'answer')),
    waitSeconds * 1000,
  );
  replica.inflight++;
  ctx.metrics.inflight.inc({ replica: label });
  const feedback = new AttemptFeedback(a.policy, a.id, replica.dialect, ctx.now(), ctx.timeScale);
  let settled = false;
  const settle = (finish: { counts: FinishCounts; report: FinalReport } | undefined, outcome: string) => {
    if (settled) return;
    settled = true;
    ctx.metrics.attempts.inc({ replica: label, outcome });
    const now = ctx.now();
    if (finish === undefined) {
      feedback.failed(now);
      return;
    }
    const { counts } = finish;
    feedback.finished(now, finish.report, counts);
    ctx.advisor?.finished(a.body.model, counts, now);
    ctx.metrics.latency.observe(now - a.arrival);
    ctx.metrics.promptTokens.inc({ replica: label }, counts.promptTokens);
    ctx.metrics.cachedTokens.inc({ replica: label }, counts.cachedTokens);
    // Without KV events, a cached count below what the policy believed tells of an eviction.
    if (replica.kvEvents === undefined) {
      const kept = cachedTokensEviction(a.tokens, a.decision.matchedTokens, counts);
      if (kept !== undefined) {
        a.policy.instanceEvicted(replica.id, a.tokens, kept, now);
        ctx.metrics.evictions.inc({ replica: label, source: 'cached_tokens' });
      }
    }
  };
  const firstToken = (chunk: FinalReport) => {
    if (feedback.firstTokenTime !== undefined) return;
    const now = ctx.now();
    feedback.firstToken(now, chunk);
    ctx.metrics.ttft.observe(now - a.arrival);
    a.onFirstToken?.(now, chunk);
  };
  const raw = reply.raw;
  try {
    const n = a.body['n'];
    if (typeof n === 'number' && n > replica.dialect.maxChoices) {
      // The engine cannot: the client's request, not a replica fault.
      settle(undefined, 'client_error');
      markReply(reply, a);
      sendError(
        reply,
        400,
        `n: ${replica.dialect.name} replicas answer at most ${replica.dialect.maxChoices} choice per request, got ${n}`,
        'invalid_request_error',
        'unsupported_value',
        'n',
      );
      return { kind: 'answered', ok: false };
    }
    // A kept-alive connection lost as the request went out is no fault of the replica: sent once more.
    const res = await requestResending(
      replica.pool,
      {
        path: a.kind === 'chat' ? '/v1/chat/completions' : '/v1/completions',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(replica.dialect.shapeBody(a.body)),
        signal: upstream.signal,
        headersTimeout: waitSeconds * 1000,
        bodyTimeout: (stream ? ctx.timeouts.idleSeconds : ctx.timeouts.requestSeconds) * 1000,
      },
      () => ctx.metrics.resends.inc({ replica: label }),
    );
    if (res.statusCode >= 500 || res.statusCode === 429) {
      const text = await res.body.text();
      // A 429 is the replica's back-pressure, not a fault: try elsewhere, keep its breaker closed. Nor is
      // a decode replica's "the KV is gone" (disaggregation: the prefill runs again).
      if (res.statusCode >= 500 && upstreamCode(text) !== 'kv_transfer_failed') ctx.replicas.failed(replica);
      settle(undefined, 'replica_error');
      return {
        kind: 'retryable',
        status: 502,
        message: `replica ${replica.url} answered ${res.statusCode}: ${upstreamMessage(text)}`,
        code: 'replica_failed',
        upstreamCode: upstreamCode(text),
        upstreamStatus: res.statusCode,
      };
    }
    if (res.statusCode >= 400) {
      // The client's mistake, reported by a working replica: pass it on, never count it as a fault.
      const text = await res.body.text();
      ctx.replicas.succeeded(replica);
      const tooLong = tooLongOutcome(ctx.replicas, replica, res.statusCode, text);
      if (tooLong !== undefined) {
        // Too long for this replica, not for the fleet (mixed GPUs): a larger one may take it.
        settle(undefined, 'context_length');
        return tooLong;
      }
      settle(undefined, 'client_error');
      markReply(reply, a);
      if (isJson(text)) reply.code(res.statusCode).type('application/json').send(text);
      else sendError(reply, res.statusCode, upstreamMessage(text));
      return { kind: 'answered', ok: false };
    }
    if (!String(res.headers['content-type'] ?? '').includes('text/event-stream')) {
      // A replica that answered in one piece although asked to stream: its answer is the first token.
      const json = (await res.body.json()) as FinalReport;
      clearTimeout(firstTokenTimer);
      firstToken(json);
      ctx.replicas.succeeded(replica);
      settle({ counts: replica.dialect.countsFrom(json, a.promptTokens), report: json }, 'ok');
      markReply(reply, a);
      reply.send(json);
      return { kind: 'answered', ok: true };
    }
    const hooks: StreamHooks = {
      firstEvent: () => clearTimeout(firstTokenTimer),
      firstToken,
      finished: (report) => {
        clearTimeout(firstTokenTimer);
        ctx.replicas.succeeded(replica);
        settle({ counts: replica.dialect.countsFrom(report, a.promptTokens), report }, 'ok');
      },
    };
    return stream
      ? await relayStream(a, res.body, reply, hooks)
      : await gatherStream(a, res.body, reply, hooks);
  } catch (error) {
    const reason = upstream.signal.aborted ? upstream.signal.reason : error;
    if (a.cancel.aborted) {
      settle(undefined, 'client_closed');
      if (raw.headersSent && !raw.writableEnded) endStreamWithError(raw, 'the gateway is shutting down');
      return { kind: 'cancelled' };
    }
    ctx.replicas.failed(replica);
    const timedOut = reason instanceof UpstreamTimeout || isUndiciTimeout(reason);
    settle(undefined, timedOut ? 'timeout' : 'replica_error');
    const message = timedOut
      ? `replica ${replica.url} timed out waiting for the ${reason instanceof UpstreamTimeout ? reason.message : 'answer'}`
      : `replica ${replica.url} failed: ${describe(reason)}`;
    if (raw.headersSent) {
      // Streaming had begun: end it with an error event and a clean close, never a hang.
      if (!raw.writableEnded) endStreamWithError(raw, message);
      return { kind: 'answered', ok: false };
    }
    return {
      kind: 'retryable',
      status: timedOut ? 504 : 502,
      message,
      code: timedOut ? 'replica_timeout' : 'replica_failed',
    };
  } finally {
    clearTimeout(firstTokenTimer);
    a.cancel.removeEventListener('abort', onCancel);
    replica.inflight--;
    ctx.metrics.inflight.dec({ replica: label });
    if (!settled) settle(undefined, 'replica_error'); // unreachable by design; keeps counts exact regardless
  }
}

interface StreamHooks {
  /** The replica's first event (of any kind) arrived. */
  firstEvent(): void;
  /** The first chunk carrying output (text, or a choice's end). */
  firstToken(chunk: FinalReport): void;
  finished(report: FinalReport): void;
}

/** What feedback reads of a chunk, kept from the latest chunk that had it. */
class ReportFields {
  readonly report: {
    usage?: FinalReport['usage'];
    timings?: FinalReport['timings'];
    preble_timing?: FinalReport['preble_timing'];
    metrics?: FinalReport['metrics'];
  } = {};

  take(chunk: FinalReport): void {
    if (chunk.usage) this.report.usage = chunk.usage;
    if (chunk.timings) this.report.timings = chunk.timings;
    if (chunk.preble_timing && this.report.preble_timing === undefined)
      this.report.preble_timing = chunk.preble_timing;
    if (chunk.metrics) this.report.metrics = chunk.metrics;
  }
}

/** Whether an event's data may hold something feedback reads (cheap test before parsing). */
function mayReport(data: string): boolean {
  return data.includes('"usage"') || data.includes('"timings"') || data.includes('"metrics"');
}

/** Relay SSE events; the client's headers go out with the first event, so earlier failures stay retryable. */
async function relayStream(
  a: Attempt,
  body: AsyncIterable<Buffer>,
  reply: FastifyReply,
  hooks: StreamHooks,
): Promise<AttemptOutcome> {
  const raw = reply.raw;
  const clientWantsUsage = a.body.stream_options?.include_usage === true;
  const fields = new ReportFields();
  let first = true;
  let output = false;
  const events = new SseSplitter();
  const begin = () => {
    first = false;
    hooks.firstEvent();
    reply.hijack();
    raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-preble-replica': a.replica.url,
      'x-preble-branch': a.decision.branch,
    });
  };
  for await (const chunk of body) {
    // The events of one upstream chunk go out in one write: one syscall, not one per token.
    let out = '';
    for (const { raw: event, data } of events.push(chunk)) {
      // Until the first output every chunk is read (to time the first token); then only reports.
      if (data !== '' && data !== '[DONE]' && (!output || mayReport(data))) {
        const parsed = parseChunk(data);
        if (parsed !== undefined) {
          fields.take(parsed);
          if (!output && carriesOutput(parsed)) {
            output = true;
            hooks.firstToken(parsed);
          }
          if (!clientWantsUsage && parsed.usage && parsed.choices?.length === 0) continue; // the usage-only chunk they did not ask for
        }
      }
      if (first) begin();
      out += event;
    }
    if (out.length > 0 && !raw.write(out)) await drained(raw, a.cancel);
  }
  if (first) begin();
  if (events.rest.length > 0) raw.write(events.rest);
  hooks.finished(fields.report);
  raw.end();
  return { kind: 'answered', ok: true };
}

/**
 * Read a replica's stream to its end and answer the client (who did not ask for a stream) with the
 * non-streamed answer built from it. Nothing reaches the client before the end, so a replica that
 * fails at any point leaves the request free to be retried.
 */
async function gatherStream(
  a: Attempt,
  body: AsyncIterable<Buffer>,
  reply: FastifyReply,
  hooks: StreamHooks,
): Promise<AttemptOutcome> {
  const fields = new ReportFields();
  const aggregate = new StreamAggregator(a.kind);
  let output = false;
  let complete = false;
  const events = new SseSplitter();
  for await (const chunk of body) {
    for (const { data } of events.push(chunk)) {
      if (data === '[DONE]') complete = true;
      if (data === '' || data === '[DONE]') continue;
      const parsed = parseChunk(data);
      if (parsed === undefined) continue;
      if (parsed.error !== undefined && parsed.error !== null && parsed.choices === undefined)
        throw new UpstreamStreamError(`error event in its stream: ${upstreamMessage(data)}`);
      fields.take(parsed);
      aggregate.push(parsed);
      if (!output && carriesOutput(parsed)) {
        output = true;
        hooks.firstToken(parsed);
      }
      if (parsed.choices?.some((c) => c.finish_reason !== null && c.finish_reason !== undefined))
        complete = true;
    }
  }
  // A stream closed cleanly but cut short (no choice ended, no [DONE]) is no answer: try elsewhere.
  if (!complete) throw new UpstreamStreamError('its stream ended before the answer was complete');
  hooks.finished(fields.report);
  markReply(reply, a);
  reply.send(aggregate.result());
  return { kind: 'answered', ok: true };
}

function parseChunk(data: string): (UpstreamChunk & FinalReport) | undefined {
  try {
    const parsed = JSON.parse(data) as unknown;
    return typeof parsed === 'object' && parsed !== null
      ? (parsed as UpstreamChunk & FinalReport)
      : undefined;
  } catch {
    return undefined; // not JSON: relayed as it came, read by nobody
  }
}

/** Wait for the client to take more data, or for the attempt to be cancelled (a client that left never drains). */
async function drained(raw: ServerResponse, cancel: AbortSignal): Promise<void> {
  if (raw.destroyed) throw new Error('client connection closed');
  await once(raw, 'drain', { signal: cancel });
}

function endStreamWithError(raw: ServerResponse, message: string): void {
  if (raw.destroyed) return; // the client is gone: nobody to tell
  raw.write(
    `data: ${JSON.stringify({ error: { message, type: 'upstream_error', param: null, code: 'replica_failed' } })}\n\n`,
  );
  raw.end();
}

function markReply(reply: FastifyReply, a: Attempt): void {
  reply.header('x-preble-replica', a.replica.url);
  reply.header('x-preble-branch', a.decision.branch);
}

export function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The message inside an OpenAI-style error body, else the text itself (trimmed). */
export function upstreamMessage(text: string): string {
  try {
    const m = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    if (typeof m === 'string') return m;
  } catch {
    // not JSON: fall through
  }
  return text.slice(0, 200).trim() || '(empty body)';
}

/**
 * A replica's 400 saying the prompt (with max_tokens) exceeds what it can hold: `context_length_exceeded`
 * (OpenAI, `preble engine`), llama-server's `exceed_context_size_error`, or vLLM's and SGLang's wording
 * ("maximum context length", "longer than the model's context length").
 */
export function isContextLengthRefusal(text: string): boolean {
  try {
    const error = (JSON.parse(text) as { error?: { code?: unknown; type?: unknown } }).error;
    if (error?.code === 'context_length_exceeded' || error?.type === 'exceed_context_size_error') return true;
  } catch {
    // not JSON: the wording below decides
  }
  return /maximum context length|context length|context size/i.test(text);
}

/**
 * A replica's 4xx answer `text` as a try to retry on a larger replica (`tooLong`): a context-length
 * refusal while a replica of its pool and role takes longer requests; else undefined (the client's
 * mistake, relayed).
 */
export function tooLongOutcome(
  replicas: ReplicaSet,
  replica: Replica,
  status: number,
  text: string,
): AttemptOutcome | undefined {
  if (status !== 400 || !isContextLengthRefusal(text) || !largerReplicas(replicas, replica)) return undefined;
  return tooLongRefusal(replica, upstreamMessage(text));
}

/** The retryable outcome of a replica too small for the request, in `message`'s words. */
function tooLongRefusal(replica: Replica, message: string): AttemptOutcome {
  return {
    kind: 'retryable',
    status: 400,
    message,
    code: 'context_length_exceeded',
    upstreamStatus: 400,
    tooLong: true,
    refusedBy: replica.id,
  };
}

/**
 * A replica the gateway already knows too small for a request of `need` tokens (prompt and max_tokens)
 * while a larger one of its pool and role is present: the try ends before anything is sent, as the
 * replica's 400 would end it (used for a decode replica named at routing, whose refusal would come
 * only after the prefill leg ran). Undefined otherwise, the replica's own answer deciding.
 */
export function knownTooLong(
  replicas: ReplicaSet,
  replica: Replica,
  need: number,
): AttemptOutcome | undefined {
  const limit = lengthLimit(replica);
  if (need <= limit || !largerReplicas(replicas, replica)) return undefined;
  return tooLongRefusal(
    replica,
    `this request needs ${need} tokens (prompt and max_tokens); replica ${replica.url} takes ${limit}`,
  );
}

/**
 * The longest request (prompt and max_tokens) a replica takes, as far as the gateway knows: its KV
 * tokens (configured, or its `costModel` preset's), and no more than the limit its /v1/models lists
 * for its model where discovery read it: `max_model_len` (vLLM, SGLang, `preble engine`), or
 * llama-server's `meta.n_ctx` (one slot's context, what it checks a prompt against; not `n_ctx_train`).
 */
function lengthLimit(replica: Replica): number {
  const model = replica.models[0];
  const meta = model?.meta as { n_ctx?: unknown } | undefined;
  const listed = model?.max_model_len ?? meta?.n_ctx;
  return typeof listed === 'number' && listed > 0 ? Math.min(replica.kvTokens, listed) : replica.kvTokens;
}

/** Whether a present replica of `replica`'s pool and role takes longer requests than it does. */
function largerReplicas(replicas: ReplicaSet, replica: Replica): boolean {
  const limit = lengthLimit(replica);
  return replicas.peersOf(replica).some((r) => lengthLimit(r) > limit);
}

/** Add to `avoid` every present replica of `refused`'s pool and role no larger: each would refuse too. */
export function avoidNoLarger(replicas: ReplicaSet, refused: Replica, avoid: InstanceId[]): void {
  const limit = lengthLimit(refused);
  for (const r of replicas.peersOf(refused))
    if (lengthLimit(r) <= limit && !avoid.includes(r.id)) avoid.push(r.id);
}

/** The `error.code` of an OpenAI-style error body, if any. */
export function upstreamCode(text: string): string | undefined {
  try {
    const c = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
    return typeof c === 'string' ? c : undefined;
  } catch {
    return undefined;
  }
}

export function isUndiciTimeout(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  );
}

export function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
