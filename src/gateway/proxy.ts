import type { FastifyReply, FastifyRequest } from 'fastify';
import { NoInstanceAvailableError } from '../core/cluster-view.ts';
import type { FinishCounts, GlobalPolicy, RouteDecision } from '../core/types.ts';
import { encodeChars } from '../text/char-tokenizer.ts';
import { renderChat } from '../text/chat-template.ts';
import { SseSplitter } from '../text/sse.ts';
import { sendError } from './errors.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { ReplicaSet } from './replicas.ts';
import { type CompletionBody, parseCompletionBody } from './validate.ts';

export type RouteKind = 'completions' | 'chat';

export interface ProxyContext {
  readonly policy: GlobalPolicy;
  readonly replicas: ReplicaSet;
  readonly metrics: GatewayMetrics;
  /** Seconds on a monotonic clock. */
  readonly now: () => number;
}

interface Usage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}

let sequence = 0;

/** Route one OpenAI request with the policy and forward it to the chosen replica. */
export async function proxy(
  kind: RouteKind,
  request: FastifyRequest,
  reply: FastifyReply,
  ctx: ProxyContext,
) {
  const parsed = parseCompletionBody(kind, request.body);
  if (!parsed.ok) return sendError(reply, 400, parsed.message, 'invalid_request_error', null, parsed.param);
  const body = parsed.body;
  // Route on the prompt the engine will cache: the whole rendered chat, never the first message alone.
  const text = kind === 'chat' ? renderChat(body.messages ?? []) : (body.prompt ?? '');
  const tokens = encodeChars(text);
  const id = `gw-${++sequence}`;
  const arrival = ctx.now();
  let decision: RouteDecision;
  try {
    decision = ctx.policy.route(
      { id, tokens, arrival, ...(body.max_tokens === undefined ? {} : { outputLenHint: body.max_tokens }) },
      arrival,
    );
  } catch (error) {
    if (error instanceof NoInstanceAvailableError) {
      return sendError(reply, 503, 'no replica is available', 'service_unavailable', 'no_replica');
    }
    throw error;
  }
  const replica = ctx.replicas.get(decision.instance)!;
  const label = String(replica.id);
  ctx.metrics.inflight.inc({ replica: label });
  ctx.metrics.matchRate.observe(tokens.length > 0 ? decision.matchedTokens / tokens.length : 0);
  let settled = false;
  const settle = (counts: FinishCounts | undefined, outcome: string) => {
    if (settled) return;
    settled = true;
    ctx.metrics.inflight.dec({ replica: label });
    ctx.metrics.requests.inc({ route: kind, branch: decision.branch, outcome });
    if (counts === undefined) {
      ctx.policy.requestFailed(id, ctx.now());
      return;
    }
    ctx.policy.requestFinished(id, ctx.now(), counts);
    ctx.metrics.latency.observe(ctx.now() - arrival);
    ctx.metrics.promptTokens.inc({ replica: label }, counts.promptTokens);
    ctx.metrics.cachedTokens.inc({ replica: label }, counts.cachedTokens);
  };
  const abort = new AbortController();
  reply.raw.on('close', () => {
    // The client went away before the answer was complete: stop the upstream work, release the count.
    if (!settled) {
      abort.abort();
      settle(undefined, 'client_closed');
    }
  });
  reply.header('x-preble-replica', replica.url);
  reply.header('x-preble-branch', decision.branch);
  const stream = body.stream === true;
  const clientWantsUsage = body.stream_options?.include_usage === true;
  // The gateway always asks for usage in streams: the replica's counts are the policy's feedback.
  const upstreamBody = stream
    ? { ...body, stream_options: { ...body.stream_options, include_usage: true } }
    : body;
  try {
    const res = await replica.pool.request({
      path: kind === 'chat' ? '/v1/chat/completions' : '/v1/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(upstreamBody),
      signal: abort.signal,
    });
    if (res.statusCode >= 400) {
      const text = await res.body.text();
      settle(undefined, `upstream_${res.statusCode}`);
      return reply.code(res.statusCode).type('application/json').send(text);
    }
    if (!stream) {
      const json = (await res.body.json()) as { usage?: Usage };
      settle(countsOf(json.usage, tokens.length), 'ok');
      return reply.send(json);
    }
    ctx.policy.requestStarted(id, ctx.now());
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-preble-replica': replica.url,
      'x-preble-branch': decision.branch,
    });
    let usage: Usage | undefined;
    let first = true;
    const events = new SseSplitter();
    for await (const chunk of res.body) {
      for (const { raw: event, data } of events.push(chunk)) {
        if (data !== '' && data !== '[DONE]' && data.includes('"usage"')) {
          const parsedEvent = JSON.parse(data) as { usage?: Usage | null; choices?: unknown[] };
          if (parsedEvent.usage) usage = parsedEvent.usage;
          if (!clientWantsUsage && parsedEvent.choices?.length === 0) continue; // the usage-only chunk they did not ask for
        }
        if (first && data !== '' && data !== '[DONE]') {
          first = false;
          ctx.policy.requestFirstToken(id, ctx.now());
          ctx.metrics.ttft.observe(ctx.now() - arrival);
        }
        if (!raw.write(event)) await new Promise((resolve) => raw.once('drain', resolve));
      }
    }
    if (events.rest.length > 0) raw.write(events.rest);
    settle(countsOf(usage, tokens.length), 'ok');
    raw.end();
  } catch (error) {
    if (settled) return; // the client closed first; nothing more to say
    settle(undefined, 'upstream_error');
    const message = `replica ${replica.url} failed: ${error instanceof Error ? error.message : String(error)}`;
    if (!reply.raw.headersSent) return sendError(reply, 502, message, 'upstream_error', 'replica_failed');
    // Streaming had begun: end the stream with an error event and a clean close, never a hang.
    reply.raw.write(`data: ${JSON.stringify({ error: { message, type: 'upstream_error' } })}\n\n`);
    reply.raw.end();
  }
}

/** Finish counts from a replica's usage (prompt in the replica's tokens; the policy uses only the share). */
function countsOf(usage: Usage | undefined, fallbackPrompt: number): FinishCounts {
  return {
    promptTokens: usage?.prompt_tokens ?? fallbackPrompt,
    cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
    outputTokens: usage?.completion_tokens ?? 0,
  };
}

export type { CompletionBody };
