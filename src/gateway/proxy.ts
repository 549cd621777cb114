import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NoInstanceAvailableError } from '../core/cluster-view.ts';
import type { RouteDecision, Tokens } from '../core/types.ts';
import type { PromptInput, PromptTokenizer } from '../text/prompt-tokenizer.ts';
import { type Admission, AdmissionRefused, type Release } from './admission.ts';
import { sendError } from './errors.ts';
import {
  type AttemptOutcome,
  avoidNoLarger,
  type ForwardContext,
  forward,
  type RouteKind,
} from './forward.ts';
import { forwardDisaggregated } from './pd-forward.ts';
import type { ModelPool } from './replicas.ts';
import { parseCompletionBody } from './validate.ts';

export interface ProxyLimits {
  readonly maxTokens: number;
  readonly promptTokens: number;
}

export interface ProxyContext extends ForwardContext {
  /** The pool serving a model; undefined: no replica is known to serve it. */
  readonly findPool: (model: string) => Promise<ModelPool | undefined>;
  readonly tokenizer: PromptTokenizer;
  readonly admission: Admission;
  readonly limits: ProxyLimits;
  readonly retries: { readonly attempts: number; readonly backoffSeconds: number };
  /** Every request's cancel switch, so the drain deadline can cut what is left (one set, not a listener each). */
  readonly cancels: Set<AbortController>;
  /** Logs prompts at debug level; off unless configured (prompts may hold personal data). */
  readonly logBodies: boolean;
  readonly advisor?: (ForwardContext['advisor'] & { arrived(model: string, at: number): void }) | undefined;
}

/** The client went away: stop its upstream work, say nothing. */
export class ClientClosed extends Error {
  constructor() {
    super('client closed the connection');
  }
}

let sequence = 0;

/**
 * One OpenAI request through the gateway: validate, admit (or 429), tokenize, route with the
 * policy, forward, and retry on another replica while nothing has reached the client. Every path
 * answers the client exactly once (unless it left) and gives back its admission slot.
 */
export async function proxy(
  kind: RouteKind,
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: ProxyContext,
) {
  const parsed = parseCompletionBody(kind, request.body);
  if (!parsed.ok) return refuse(reply, ctx, 400, parsed.message, 'bad_request', null, parsed.param);
  const body = parsed.body;
  if (body.max_tokens !== undefined && body.max_tokens > ctx.limits.maxTokens)
    return refuse(
      reply,
      ctx,
      400,
      `max_tokens: at most ${ctx.limits.maxTokens}, got ${body.max_tokens}`,
      'bad_request',
      null,
      'max_tokens',
    );
  const pool = await ctx.findPool(body.model);
  if (pool === undefined)
    return refuse(
      reply,
      ctx,
      404,
      `model '${body.model}' does not exist`,
      'model_not_found',
      'model_not_found',
      'model',
    );
  // Latency counts from here: time waiting for admission and tokenizing is the client's time too.
  const arrival = ctx.now();
  const cancel = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) cancel.abort(new ClientClosed());
  };
  reply.raw.on('close', onClose);
  ctx.cancels.add(cancel);
  let release: Release | undefined;
  try {
    ctx.metrics.queued.set(ctx.admission.queued + 1);
    try {
      release = await ctx.admission.acquire(cancel.signal);
    } catch (error) {
      if (error instanceof AdmissionRefused) {
        reply.header('retry-after', String(error.retryAfterSeconds));
        return refuse(reply, ctx, 429, error.message, error.reason, 'rate_limit_exceeded');
      }
      return cancelled(reply, ctx, cancel.signal);
    } finally {
      ctx.metrics.queued.set(ctx.admission.queued);
    }
    const input: PromptInput =
      kind === 'chat' ? { kind, messages: body.messages ?? [] } : { kind, prompt: body.prompt ?? '' };
    let tokens: Tokens;
    try {
      tokens = await ctx.tokenizer.tokenize(input, body.model);
    } catch (error) {
      const message = `tokenizer '${ctx.tokenizer.name}' failed: ${error instanceof Error ? error.message : String(error)}`;
      return refuse(
        reply,
        ctx,
        503,
        message,
        'tokenizer_unavailable',
        'service_unavailable',
        null,
        'server_error',
      );
    }
    if (tokens.length > ctx.limits.promptTokens)
      return refuse(
        reply,
        ctx,
        400,
        `the prompt is ${tokens.length} tokens; the limit is ${ctx.limits.promptTokens}`,
        'prompt_too_long',
        'context_length_exceeded',
        kind === 'chat' ? 'messages' : 'prompt',
      );
    if (ctx.logBodies) request.log.debug({ prompt: input }, 'prompt');
    return await attempts(kind, body, pool, tokens, arrival, request, reply, ctx, cancel.signal);
  } finally {
    release?.();
    reply.raw.off('close', onClose);
    ctx.cancels.delete(cancel);
  }
}

async function attempts(
  kind: RouteKind,
  body: Parameters<typeof forward>[0]['body'],
  pool: ModelPool,
  tokens: Tokens,
  arrival: number,
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: ProxyContext,
  cancel: AbortSignal,
) {
  const base = `gw-${++sequence}`;
  ctx.advisor?.arrived(body.model, arrival);
  const avoid: number[] = [];
  let last: Extract<AttemptOutcome, { kind: 'retryable' }> | undefined;
  for (let attempt = 0; attempt <= ctx.retries.attempts; attempt++) {
    if (attempt > 0) {
      ctx.metrics.retries.inc();
      // A replica too small for the prompt is no fault to back off from.
      if (last?.tooLong !== true) {
        try {
          await sleep(ctx.retries.backoffSeconds * 1000 * 2 ** (attempt - 1), undefined, { signal: cancel });
        } catch {
          return cancelled(reply, ctx, cancel);
        }
      }
    }
    const id = attempt === 0 ? base : `${base}.${attempt}`;
    let decision: RouteDecision;
    try {
      decision = pool.policy.route(
        {
          id,
          tokens,
          arrival,
          avoid,
          ...(body.max_tokens === undefined ? {} : { outputLenHint: body.max_tokens }),
        },
        ctx.now(),
      );
    } catch (error) {
      // A disaggregated policy with no prefill replica left to try says so in its own words.
      if (!(error instanceof NoInstanceAvailableError) && attempt === 0 && decisionlessIsBug(error))
        throw error;
      break;
    }
    const replica = ctx.replicas.get(decision.instance)!;
    if (attempt === 0)
      ctx.metrics.matchRate.observe(tokens.length > 0 ? decision.matchedTokens / tokens.length : 0);
    const a = {
      kind,
      id,
      body,
      tokens,
      promptTokens: tokens.length,
      arrival,
      policy: pool.policy,
      decision,
      replica,
      cancel,
      avoid,
    };
    // A decision with a decode leg runs in two legs (prefill, KV hand-off, decode): pd-forward.ts.
    const outcome =
      decision.decode === undefined
        ? await forward(a, reply, ctx)
        : await forwardDisaggregated(a, reply, ctx);
    if (outcome.kind === 'cancelled') return cancelled(reply, ctx, cancel);
    if (outcome.kind === 'answered') {
      ctx.metrics.requests.inc({
        route: kind,
        branch: decision.branch,
        outcome: outcome.ok ? 'ok' : 'error',
      });
      request.log.info(
        { replica: replica.url, branch: decision.branch, attempts: attempt + 1, ok: outcome.ok },
        'routed',
      );
      return reply;
    }
    last = outcome;
    // Nothing reached the client yet; the operator still hears of the replica's fault (a 429 is its
    // back-pressure and a too-long prompt the replica's size, not faults: info, or a busy fleet would
    // flood the log).
    request.log[outcome.upstreamStatus === 429 || outcome.tooLong === true ? 'info' : 'warn'](
      { replica: replica.url, attempt: attempt + 1, status: outcome.status, code: outcome.code },
      outcome.message,
    );
    if (outcome.tooLong === true) {
      // Every replica of the pool and role no larger than the one that refused (the routed one, or a
      // disaggregated request's decode replica) would refuse it too.
      avoidNoLarger(ctx.replicas, ctx.replicas.get(outcome.refusedBy ?? decision.instance) ?? replica, avoid);
    } else if (outcome.avoid !== false) avoid.push(decision.instance);
  }
  if (last === undefined)
    return refuse(
      reply,
      ctx,
      503,
      'no replica is available',
      'no_replica',
      'no_replica',
      null,
      'service_unavailable',
    );
  if (last.tooLong === true)
    return refuse(reply, ctx, 400, last.message, 'context_length', 'context_length_exceeded');
  return refuse(reply, ctx, last.status, last.message, 'replica_failed', last.code, null, 'upstream_error');
}

/**
 * Whether a policy's error on the first route is a bug (thrown on) rather than "no instance can take
 * it": the disaggregated policies say the latter in their own words when no prefill replica is active.
 */
function decisionlessIsBug(error: unknown): boolean {
  return !(error instanceof Error && /no active prefill instance/.test(error.message));
}

/** The gateway answers an error itself, and counts it by reason. */
function refuse(
  reply: FastifyReply,
  ctx: ProxyContext,
  status: number,
  message: string,
  reason: string,
  code: string | null = null,
  param: string | null = null,
  type = 'invalid_request_error',
): FastifyReply {
  ctx.metrics.refused.inc({ reason });
  return sendError(reply, status, message, type, code, param);
}

/** The client left (nothing to send) or the gateway is shutting down (503 if nothing was sent yet). */
function cancelled(reply: FastifyReply, ctx: ProxyContext, cancel: AbortSignal): FastifyReply {
  if (cancel.reason instanceof ClientClosed) {
    ctx.metrics.refused.inc({ reason: 'client_closed' });
    if (!reply.sent) reply.hijack(); // nobody to answer: tell Fastify not to try
    return reply;
  }
  if (reply.sent || reply.raw.headersSent) return reply;
  return refuse(
    reply,
    ctx,
    503,
    'the gateway is shutting down',
    'shutting_down',
    'shutting_down',
    null,
    'service_unavailable',
  );
}
