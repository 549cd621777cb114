import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyReply } from 'fastify';
import type {
  FinishCounts,
  GlobalPolicy,
  InstanceId,
  InstanceInfo,
  InstanceLoadSignal,
  RouteDecision,
  RouteRequest,
  Tokens,
} from '../core/types.ts';
import type { FinalReport } from './dialects.ts';
import { sendError } from './errors.ts';
import {
  type Attempt,
  type AttemptOutcome,
  avoidNoLarger,
  describe,
  type ForwardContext,
  forward,
  isJson,
  isUndiciTimeout,
  knownTooLong,
  tooLongOutcome,
  upstreamMessage,
} from './forward.ts';
import { kvTransferParams } from './pd-kv-params.ts';
import { llamacppSlots } from './pd-llamacpp.ts';
import type { PdProtocol, PdSession } from './pd-protocol.ts';
import { sglangBootstrap } from './pd-sglang.ts';
import type { Replica } from './replicas.ts';
import { requestResending } from './upstream-request.ts';

export { prefillBody } from './pd-kv-params.ts';

/**
 * Prefill/decode disaggregation: one try of a request whose route decision has a decode leg
 * (`decision.decode`), in two legs (docs/gateway.md, "Prefill/decode disaggregation"):
 *
 * 1. The prefill leg on `decision.instance`: the client's body with one token, not streamed, as the
 *    prefill replica's PD protocol shapes it (`pdProtocolOf`: vLLM-style `kv_transfer_params` in
 *    pd-kv-params.ts, llama.cpp's slot save/restore in pd-llamacpp.ts), then the hand-off it reads
 *    from the answer (or runs: a slot save). Its own timeout (`timeouts.prefillSeconds`).
 * 2. The decode replica: `decision.decode`, or `routeDecode` when it is `'at-kv-ready'`.
 * 3. The decode leg: the protocol brings the KV there (vLLM: the params; llama.cpp: a slot restore)
 *    and the body is forwarded (and streamed or gathered) by the one-leg `forward`, with its timeouts.
 *
 * The policy hears, in the contract's order: requestStarted and requestFirstToken when the prefill
 * leg answers (its one token is the request's first), kvReady, routeDecode, kvArrived at the decode
 * leg's first token, then requestFinished or requestFailed, exactly once per try. Failures:
 * - the prefill leg fails (fault, 5xx, timeout, no kv_transfer_params, no slot list): the try fails
 *   and is retryable, avoiding that prefill replica (the caller routes again);
 * - the hand-off fails after a good prefill (llama.cpp: the slot save or restore), or the decode
 *   replica speaks another protocol: the decode replica computes the prompt itself (colocated),
 *   counted in preble_pd_recomputes_total;
 * - the decode leg fails before anything reached the client: it runs again with the same KV (on the
 *   replica `routeDecode` picks, or the same one), up to `retries.attempts` times; when the decode
 *   replica says the KV is gone (`kv_transfer_failed`), the try fails and is retryable without
 *   avoiding the prefill replica: the caller runs the prefill again;
 * - the decode replica refuses the request as too long for its KV (a larger one present): at once,
 *   `routeDecode` picks again avoiding every decode replica no larger, and the KV is pulled there; a
 *   decode replica named at routing ends the try instead, and the caller routes again avoiding them
 *   (before the prefill leg, when its known limit already says so: `knownTooLong`);
 * - the client leaves: both legs are aborted, the try fails, every count is given back once.
 */
export async function forwardDisaggregated(
  a: Attempt,
  reply: FastifyReply,
  ctx: ForwardContext & { readonly retries: { readonly attempts: number; readonly backoffSeconds: number } },
): Promise<AttemptOutcome> {
  const journey = new Journey(a.policy, a.id);
  const prefill = a.replica;
  reply.raw.setHeader('x-preble-prefill-replica', prefill.url);
  if (typeof a.body['n'] === 'number' && a.body['n'] > 1) {
    journey.failed(ctx.now());
    sendError(
      reply,
      400,
      'n: a disaggregated fleet answers one choice per request',
      'invalid_request_error',
      'unsupported_value',
      'n',
    );
    return { kind: 'answered', ok: false };
  }
  // A decode replica named at routing (Splitwise) known too small: routed again now, not after a prefill.
  const named = typeof a.decision.decode === 'number' ? ctx.replicas.get(a.decision.decode) : undefined;
  const maxTokens = typeof a.body['max_tokens'] === 'number' ? a.body['max_tokens'] : 1;
  const early = named && knownTooLong(ctx.replicas, named, a.promptTokens + maxTokens);
  if (early) {
    journey.failed(ctx.now());
    return early;
  }
  const protocol = pdProtocolOf(prefill);
  const session = protocol.open(a);
  try {
    return protocol.concurrent === true
      ? await concurrentLegs(a, reply, ctx, journey, session)
      : await twoLegs(a, reply, ctx, journey, session);
  } finally {
    session.close();
  }
}

async function twoLegs(
  a: Attempt,
  reply: FastifyReply,
  ctx: ForwardContext & { readonly retries: { readonly attempts: number; readonly backoffSeconds: number } },
  journey: Journey,
  session: PdSession,
): Promise<AttemptOutcome> {
  const prefill = a.replica;
  const leg = await prefillLeg(a, reply, ctx, journey, session);
  if (leg.kind !== 'ready') return leg.outcome;
  let now = ctx.now();
  journey.kvReady(prefill.id, a.tokens, now);
  // Decode replicas this request keeps off: those that refused it as too long for their KV.
  const decodeAvoid: InstanceId[] = [...(a.avoid ?? [])];
  const pickDecode = (): InstanceId | undefined => {
    if (a.decision.decode !== 'at-kv-ready') return a.decision.decode;
    try {
      return a.policy.routeDecode?.(a.id, prefill.id, a.tokens.length, ctx.now(), decodeAvoid);
    } catch {
      return undefined; // no decode replica in the view
    }
  };
  let last: Extract<AttemptOutcome, { kind: 'retryable' }> | undefined;
  for (let attempt = 0; attempt <= ctx.retries.attempts; attempt++) {
    if (attempt > 0) {
      ctx.metrics.pdLegRetries.inc({ leg: 'decode' });
      // A decode replica too small for the request is no fault to back off from.
      if (last?.tooLong !== true) {
        try {
          await sleep(ctx.retries.backoffSeconds * 1000 * 2 ** (attempt - 1), undefined, {
            signal: a.cancel,
          });
        } catch {
          journey.failed(ctx.now());
          return { kind: 'cancelled' };
        }
      }
    }
    const decodeId = pickDecode();
    const decode = decodeId === undefined ? undefined : ctx.replicas.get(decodeId);
    if (decode === undefined || decodeId === undefined) {
      journey.failed(ctx.now());
      return NO_DECODE_REPLICA;
    }
    let plan: Awaited<ReturnType<PdSession['decodeRequest']>>;
    try {
      plan = await session.decodeRequest(decode, a.cancel);
    } catch {
      journey.failed(ctx.now());
      return { kind: 'cancelled' };
    }
    reply.raw.setHeader('x-preble-pd-handoff', plan.handOff);
    if (plan.handOff === 'recompute') ctx.metrics.pdRecomputes.inc({ reason: plan.reason ?? 'unknown' });
    if (plan.detail !== undefined)
      reply.raw.setHeader('x-preble-pd-recompute', plan.detail.slice(0, 200).replace(/[^\x20-\x7e]/g, ' '));
    if (plan.transferSeconds !== undefined)
      ctx.metrics.pdTransfer.observe(plan.transferSeconds * ctx.timeScale);
    const dispatched = ctx.now();
    const outcome = await forward(
      {
        ...a,
        body: plan.body as Attempt['body'],
        policy: journey.decodeLegPolicy(),
        // matchedTokens 0: the decode replica's cached count tells nothing of evictions.
        decision: { ...a.decision, instance: decodeId, matchedTokens: 0 },
        replica: decode,
        onFirstToken: (t, chunk) => {
          ctx.metrics.pdDecodeTtft.observe(t - dispatched);
          const ms = (chunk.preble_timing as { kv_transfer_ms?: unknown } | undefined)?.kv_transfer_ms;
          if (typeof ms === 'number' && Number.isFinite(ms) && ms >= 0)
            ctx.metrics.pdTransfer.observe((ms / 1000) * ctx.timeScale);
          journey.arrived(decodeId, a.tokens, t);
        },
      },
      reply,
      ctx,
    ).finally(() => plan.release());
    now = ctx.now();
    if (outcome.kind === 'answered') {
      // Finished (the wrapper told the policy) or ended by an error: either way exactly once.
      journey.failed(now);
      return outcome;
    }
    if (outcome.kind === 'cancelled') {
      journey.failed(now);
      return outcome;
    }
    last = outcome;
    if (outcome.tooLong === true) {
      // The decode replica refused it before pulling the KV: a larger one pulls it, no prefill again.
      avoidNoLarger(ctx.replicas, decode, decodeAvoid);
      // A decode replica named at routing: route again (the caller avoids the refusing one's size).
      if (a.decision.decode !== 'at-kv-ready') break;
      continue;
    }
    if (outcome.upstreamCode === 'kv_transfer_failed') {
      // The KV is gone (pulled by a decode try that then failed, or released): prefill again.
      journey.failed(now);
      ctx.metrics.pdLegRetries.inc({ leg: 'prefill' });
      return { ...outcome, avoid: false };
    }
  }
  journey.failed(ctx.now());
  return { ...last!, avoid: false };
}

/**
 * Both legs at once (SGLang: the engines meet through the prefill's bootstrap server, so the decode
 * replica must be named at dispatch; `routeDecode` is asked then, before `kvReady`, the one change to
 * the contract's order). The prefill leg's answer is dropped once read; the decode leg is the client's.
 * Failures: the prefill leg fails -> the decode leg is aborted and the try is retried avoiding that
 * prefill replica; the decode leg fails before the first byte -> the prefill leg is aborted (its KV
 * waits for that decode request alone) and the try is retried, prefill included; the client leaves ->
 * both are aborted.
 */
async function concurrentLegs(
  a: Attempt,
  reply: FastifyReply,
  ctx: ForwardContext,
  journey: Journey,
  session: PdSession,
): Promise<AttemptOutcome> {
  const prefill = a.replica;
  let decodeId: InstanceId | undefined;
  if (a.decision.decode !== 'at-kv-ready') decodeId = a.decision.decode;
  else
    try {
      decodeId = a.policy.routeDecode?.(a.id, prefill.id, a.tokens.length, ctx.now(), a.avoid);
    } catch {
      decodeId = undefined; // no decode replica in the view
    }
  const decode = decodeId === undefined ? undefined : ctx.replicas.get(decodeId);
  if (decode === undefined || decodeId === undefined) {
    journey.failed(ctx.now());
    return NO_DECODE_REPLICA;
  }
  const stopPrefill = new AbortController();
  const stopDecode = new AbortController();
  const prefillCancel = AbortSignal.any([a.cancel, stopPrefill.signal]);
  const decodeCancel = AbortSignal.any([a.cancel, stopDecode.signal]);
  const dispatched = ctx.now();
  // The decode leg's first token means the prefill is done, whichever answer the gateway reads first.
  const prefillDone = (now: number) => {
    journey.prefilled(now, dispatched, undefined, ctx.timeScale);
    journey.kvReady(prefill.id, a.tokens, now);
  };
  const prefillRun = prefillLeg({ ...a, cancel: prefillCancel }, reply, ctx, journey, session).then((leg) => {
    if (leg.kind === 'ready') prefillDone(ctx.now());
    else if (!a.cancel.aborted) stopDecode.abort(new Error('the prefill leg failed'));
    return leg;
  });
  const decodeRun = (async (): Promise<AttemptOutcome> => {
    let plan: Awaited<ReturnType<PdSession['decodeRequest']>>;
    try {
      plan = await session.decodeRequest(decode, decodeCancel);
    } catch {
      return { kind: 'cancelled' };
    }
    reply.raw.setHeader('x-preble-pd-handoff', plan.handOff);
    const sent = ctx.now();
    return forward(
      {
        ...a,
        cancel: decodeCancel,
        body: plan.body as Attempt['body'],
        policy: journey.decodeLegPolicy(),
        decision: { ...a.decision, instance: decodeId, matchedTokens: 0 },
        replica: decode,
        onFirstToken: (t) => {
          ctx.metrics.pdDecodeTtft.observe(t - sent);
          prefillDone(t);
          journey.arrived(decodeId, a.tokens, t);
        },
      },
      reply,
      ctx,
    ).finally(() => plan.release());
  })();
  const decoded = await decodeRun;
  if (decoded.kind !== 'answered') stopPrefill.abort(new Error('the decode leg ended'));
  const leg = await prefillRun;
  if (a.cancel.aborted) {
    journey.failed(ctx.now());
    return decoded.kind === 'answered' ? decoded : { kind: 'cancelled' };
  }
  if (decoded.kind === 'answered') {
    journey.failed(ctx.now()); // no-op once finished
    return decoded;
  }
  journey.failed(ctx.now());
  // The prefill leg failed first: its outcome says why (retry avoiding that prefill replica).
  if (leg.kind === 'done' && leg.outcome.kind !== 'cancelled') return leg.outcome;
  if (decoded.kind === 'retryable') {
    ctx.metrics.pdLegRetries.inc({ leg: 'prefill' });
    return { ...decoded, avoid: false };
  }
  return {
    kind: 'retryable',
    status: 502,
    message: 'the disaggregated legs failed',
    code: 'replica_failed',
    avoid: false,
  };
}

type PrefillResult = { readonly kind: 'ready' } | { readonly kind: 'done'; readonly outcome: AttemptOutcome };

/** The prefill leg: one non-streamed request for one token, whose answer names the held KV. */
async function prefillLeg(
  a: Attempt,
  reply: FastifyReply,
  ctx: ForwardContext,
  journey: Journey,
  session: PdSession,
): Promise<PrefillResult> {
  const replica = a.replica;
  const label = String(replica.id);
  const upstream = new AbortController();
  const onCancel = () => upstream.abort(a.cancel.reason);
  if (a.cancel.aborted) onCancel();
  else a.cancel.addEventListener('abort', onCancel, { once: true });
  const seconds = ctx.timeouts.prefillSeconds ?? 120;
  const timer = setTimeout(() => upstream.abort(new PrefillTimeout()), seconds * 1000);
  const dispatched = ctx.now();
  replica.inflight++;
  ctx.metrics.inflight.inc({ replica: label });
  const fail = (outcome: string): void => {
    ctx.metrics.attempts.inc({ replica: label, outcome });
    journey.failed(ctx.now());
  };
  try {
    const leg = await session.prefillRequest(upstream.signal);
    const res = await requestResending(
      replica.pool,
      {
        path: leg.path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': a.id },
        body: JSON.stringify(leg.body),
        signal: upstream.signal,
        headersTimeout: seconds * 1000,
        bodyTimeout: seconds * 1000,
      },
      () => ctx.metrics.resends.inc({ replica: label }),
    );
    const text = await res.body.text();
    if (res.statusCode >= 500 || res.statusCode === 429) {
      if (res.statusCode >= 500) ctx.replicas.failed(replica);
      fail('replica_error');
      return retryable(
        502,
        `prefill replica ${replica.url} answered ${res.statusCode}: ${upstreamMessage(text)}`,
        'replica_failed',
      );
    }
    if (res.statusCode >= 400) {
      // The client's mistake, reported by a working replica: pass it on.
      ctx.replicas.succeeded(replica);
      const tooLong = tooLongOutcome(ctx.replicas, replica, res.statusCode, text);
      if (tooLong !== undefined) {
        // Too long for this prefill replica, not for the pool: a larger one may take it (forward.ts).
        fail('context_length');
        return { kind: 'done', outcome: tooLong };
      }
      fail('client_error');
      if (isJson(text)) reply.code(res.statusCode).type('application/json').send(text);
      else sendError(reply, res.statusCode, upstreamMessage(text));
      return { kind: 'done', outcome: { kind: 'answered', ok: false } };
    }
    let json: FinalReport & Record<string, unknown>;
    try {
      const parsed = JSON.parse(text) as unknown;
      json = typeof parsed === 'object' && parsed !== null ? (parsed as typeof json) : {};
    } catch {
      json = {};
    }
    const handOff = await session.handOff(json, upstream.signal);
    if (a.cancel.aborted) throw a.cancel.reason;
    if (handOff.kind === 'bad-prefill') {
      ctx.replicas.failed(replica);
      fail('replica_error');
      return retryable(502, `prefill replica ${replica.url} ${handOff.message}`, 'replica_failed');
    }
    clearTimeout(timer);
    ctx.replicas.succeeded(replica);
    ctx.metrics.attempts.inc({ replica: label, outcome: 'ok' });
    const now = ctx.now();
    ctx.metrics.pdPrefill.observe(now - dispatched);
    journey.prefilled(now, dispatched, replica.dialect.prefillSeconds(json), ctx.timeScale);
    return { kind: 'ready' };
  } catch (error) {
    if (a.cancel.aborted) {
      fail('client_closed');
      return { kind: 'done', outcome: { kind: 'cancelled' } };
    }
    const reason = upstream.signal.aborted ? upstream.signal.reason : error;
    ctx.replicas.failed(replica);
    const timedOut = reason instanceof PrefillTimeout || isUndiciTimeout(reason);
    fail(timedOut ? 'timeout' : 'replica_error');
    return timedOut
      ? retryable(504, `prefill replica ${replica.url} timed out after ${seconds} s`, 'replica_timeout')
      : retryable(502, `prefill replica ${replica.url} failed: ${describe(reason)}`, 'replica_failed');
  } finally {
    clearTimeout(timer);
    a.cancel.removeEventListener('abort', onCancel);
    replica.inflight--;
    ctx.metrics.inflight.dec({ replica: label });
  }
}

class PrefillTimeout extends Error {}

/** No decode replica could take the KV: the try fails and may go again (the policy's view may change). */
const NO_DECODE_REPLICA: AttemptOutcome = {
  kind: 'retryable',
  status: 503,
  message: 'no decode replica is available',
  code: 'no_replica',
  avoid: false,
};

function retryable(status: number, message: string, code: string): PrefillResult {
  return { kind: 'done', outcome: { kind: 'retryable', status, message, code } };
}

/**
 * One try's policy feedback across both legs, each call at most once and in the contract's order;
 * `failed` after `finished` (or a second `failed`) does nothing, so every path may call it.
 */
class Journey {
  private ended = false;
  private kvArrived = false;
  private wasPrefilled = false;
  private wasKvReady = false;

  constructor(
    private readonly policy: GlobalPolicy,
    private readonly id: string,
  ) {}

  /** The prefill leg answered at `now`: started (dated by the engine's prefill time) and first token. */
  prefilled(
    now: number,
    dispatched: number,
    prefillWallSeconds: number | undefined,
    timeScale: number,
  ): void {
    if (this.wasPrefilled || this.ended) return;
    this.wasPrefilled = true;
    const started = Math.min(now, Math.max(dispatched, now - (prefillWallSeconds ?? 0) * timeScale));
    this.policy.requestStarted(this.id, started);
    this.policy.requestFirstToken(this.id, now);
  }

  /** The prefill's KV is ready on `prefill` (told once). */
  kvReady(prefill: InstanceId, path: Tokens, now: number): void {
    if (this.wasKvReady || this.ended) return;
    this.wasKvReady = true;
    this.policy.kvReady?.(this.id, prefill, path, now);
  }

  /** The decode leg's first token: the KV arrived there (told once, whatever retries came before). */
  arrived(decode: InstanceId, path: Tokens, now: number): void {
    if (this.kvArrived || this.ended) return;
    this.kvArrived = true;
    this.policy.kvArrived?.(this.id, decode, path, now);
  }

  finished(now: number, counts: FinishCounts): void {
    if (this.ended) return;
    this.ended = true;
    this.policy.requestFinished(this.id, now, counts);
  }

  failed(now: number): void {
    if (this.ended) return;
    this.ended = true;
    this.policy.requestFailed(this.id, now);
  }

  /**
   * What the one-leg `forward` sees as its policy for the decode leg: started and first token were
   * the prefill's (already told), a failure is the journey's to decide (retry or fail), a finish is
   * the request's; evictions pass through.
   */
  decodeLegPolicy(): GlobalPolicy {
    const p = this.policy;
    return {
      name: p.name,
      branches: p.branches,
      route: (request: RouteRequest, now: number): RouteDecision => p.route(request, now),
      requestStarted: () => {},
      requestFirstToken: () => {},
      requestFinished: (_id: string, now: number, counts: FinishCounts) => this.finished(now, counts),
      requestFailed: () => {},
      instanceEvicted: (instance: InstanceId, path: Tokens, kept: number, now: number, at?: number) =>
        p.instanceEvicted(instance, path, kept, now, at),
      instanceAdded: (instance: InstanceId, info: InstanceInfo, now: number) =>
        p.instanceAdded(instance, info, now),
      instanceDrained: (instance: InstanceId, now: number) => p.instanceDrained(instance, now),
      instanceRemoved: (instance: InstanceId, now: number) => p.instanceRemoved(instance, now),
      loadSignal: (instance: InstanceId, signal: InstanceLoadSignal, now: number) =>
        p.loadSignal(instance, signal, now),
      tick: (now: number) => p.tick(now),
    };
  }
}

/** The PD protocol of a prefill replica, by its dialect: llama.cpp moves slots, the others pass kv_transfer_params. */
export function pdProtocolOf(prefill: Replica): PdProtocol {
  if (prefill.dialect.name === 'llamacpp') return llamacppSlots;
  if (prefill.dialect.name === 'sglang') return sglangBootstrap;
  return kvTransferParams;
}
