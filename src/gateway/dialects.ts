import type { FinishCounts, InstanceLoadSignal, Tokens } from '../core/types.ts';
import type { PromptInput } from '../text/prompt-tokenizer.ts';
import type { DialectName } from './config.ts';
import { metricValues } from './prometheus-text.ts';

/** What an engine reports in `usage` (OpenAI shape) and, for llama.cpp, `timings`. */
export interface UpstreamUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
}
export interface LlamaTimings {
  cache_n?: number;
  prompt_n?: number;
  predicted_n?: number;
  /** Wall-clock milliseconds the prompt took (llama-server: from the slot's start to the first token). */
  prompt_ms?: number;
}
/** `preble engine`'s own per-choice timing, on the chunk of a choice's first token (wall-clock ms). */
export interface PrebleTiming {
  /** Submission to admission into a batch. */
  queue_ms?: number;
  /** Admission into a batch to the first token. */
  prefill_ms?: number;
}
/** vLLM's per-request metrics (`--enable-per-request-metrics` and `include_metrics`), wall-clock ms. */
export interface VllmMetrics {
  /** From when the request was scheduled (admitted) to its first token. */
  time_to_first_token_ms?: number;
  queue_time_ms?: number;
}
/** The parts of an upstream chunk (or final answer) the gateway reads for feedback. */
export interface FinalReport {
  readonly usage?: UpstreamUsage | null | undefined;
  readonly timings?: LlamaTimings | undefined;
  readonly preble_timing?: PrebleTiming | undefined;
  readonly metrics?: VllmMetrics | undefined;
}

/**
 * Which feedback of the policy contract a dialect can give (docs/gateway.md, "Feedback per dialect").
 * - started: `engine` = the engine reports when it admitted the request into a batch (the gateway
 *   subtracts that prefill time from the first token's time); `engine-opt-in` = only when the engine
 *   is started with the option named in `note`, else as `first-token`; `first-token` = not reported:
 *   requestStarted is called at the first token's time.
 * - firstToken: every request is streamed upstream, so the first token's arrival is always known.
 * - evictions: `kv-events` = the engine can publish KV-cache events (a replica's `kvEvents:`
 *   endpoint); without them, and for `cached-tokens` dialects always, evictions are inferred from the
 *   cached-token counts responses report.
 * - loadSignal: load gauges read from the engine's /metrics.
 * - tokens: the real prompt / cached / output token counts of a finished request.
 */
export interface FeedbackSupport {
  readonly started: 'engine' | 'engine-opt-in' | 'first-token';
  readonly firstToken: 'stream';
  readonly evictions: 'kv-events' | 'cached-tokens';
  readonly loadSignal: boolean;
  readonly tokens: 'usage' | 'usage-or-timings';
  /** What the engine needs for any of it, in words (logged at start-up). */
  readonly note?: string;
}

/** POST a JSON body to the replica, answer its JSON (the dialect needs nothing else of HTTP). */
export type PostJson = (path: string, body: unknown) => Promise<unknown>;

/** How the gateway talks to one kind of engine: request shape, feedback, load signals, tokenizer. */
export interface Dialect {
  readonly name: DialectName;
  /** A cached prefix serves one running request at a time (llama.cpp slots; see InstanceInfo). */
  readonly exclusivePrefixes: boolean;
  /** The most choices (`n`) one request may ask of it. */
  readonly maxChoices: number;
  /** Which feedback the gateway can give the policy for replicas of this dialect. */
  readonly feedback: FeedbackSupport;
  /**
   * The body sent upstream: the client's, always streamed (so the first token's time is known for
   * every request) with usage asked for, plus what the gateway needs for routing feedback.
   */
  shapeBody(body: Readonly<Record<string, unknown>>): Record<string, unknown>;
  /** Token counts of a finished request from the engine's final report. */
  countsFrom(report: FinalReport, fallbackPromptTokens: number): FinishCounts;
  /**
   * Wall-clock seconds from the request's admission into a batch to its first token, when this chunk
   * (the first token's, or the final report) says; undefined when it does not.
   */
  prefillSeconds(report: FinalReport): number | undefined;
  /** Load signals from the engine's /metrics text; undefined when the text has none of its names. */
  loadSignal(metricsText: string, assumedCapacityTokens: number): InstanceLoadSignal | undefined;
  /** The engine's own token ids for a request (the `backend` tokenizer mode). */
  tokenize(input: PromptInput, model: string | undefined, post: PostJson): Promise<Tokens>;
}

/** Upstream always streams and asks for usage: the replica's counts are the policy's feedback. */
function withStreamUsage(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const options = (body['stream_options'] as Record<string, unknown> | null | undefined) ?? {};
  return { ...body, stream: true, stream_options: { ...options, include_usage: true } };
}

/** A non-negative finite number of milliseconds as seconds, else undefined. */
function msToSeconds(ms: unknown): number | undefined {
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= 0 ? ms / 1000 : undefined;
}

function openAiCounts(report: FinalReport, fallbackPromptTokens: number): FinishCounts {
  const u = report.usage;
  return {
    promptTokens: u?.prompt_tokens ?? fallbackPromptTokens,
    cachedTokens: u?.prompt_tokens_details?.cached_tokens ?? 0,
    outputTokens: u?.completion_tokens ?? 0,
  };
}

function tokensOf(json: unknown, path: string): Tokens {
  const tokens = (json as { tokens?: unknown } | null)?.tokens;
  if (!Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t) && t >= 0))
    throw new Error(`replica ${path} did not answer a list of token ids`);
  return Uint32Array.from(tokens as number[]);
}

/** vLLM's /tokenize (preble engine and SGLang accept the same body). */
async function openAiTokenize(
  input: PromptInput,
  model: string | undefined,
  post: PostJson,
): Promise<Tokens> {
  const body =
    input.kind === 'chat'
      ? { model, messages: input.messages, add_generation_prompt: true }
      : { model, prompt: input.prompt };
  return tokensOf(await post('/tokenize', body), '/tokenize');
}

function gaugeSignal(
  text: string,
  assumedCapacityTokens: number,
  names: {
    running: string;
    waiting: string;
    usage?: readonly string[];
    capacity?: string;
    queued?: string;
    free?: string;
  },
): InstanceLoadSignal | undefined {
  const wanted = [names.running, names.waiting, ...(names.usage ?? [])];
  for (const n of [names.capacity, names.queued, names.free]) if (n !== undefined) wanted.push(n);
  const v = metricValues(text, wanted);
  if (!v.has(names.running) && !v.has(names.waiting)) return undefined;
  const capacity =
    (names.capacity === undefined ? undefined : v.get(names.capacity)) ?? assumedCapacityTokens;
  let share = 0;
  for (const n of names.usage ?? []) share = Math.max(share, v.get(n) ?? 0);
  const used = Math.round(share * capacity);
  return {
    running: v.get(names.running) ?? 0,
    waiting: v.get(names.waiting) ?? 0,
    // Engines that do not export queued prefill tokens leave the waiting count to speak.
    queuedPrefillTokens: (names.queued === undefined ? undefined : v.get(names.queued)) ?? 0,
    usedKvTokens: used,
    freeKvTokens: (names.free === undefined ? undefined : v.get(names.free)) ?? Math.max(0, capacity - used),
  };
}

const vllmNames = {
  running: 'vllm:num_requests_running',
  waiting: 'vllm:num_requests_waiting',
  // v0 and v1 names of the same gauge.
  usage: ['vllm:gpu_cache_usage_perc', 'vllm:kv_cache_usage_perc'],
} as const;

const preble: Dialect = {
  name: 'preble',
  exclusivePrefixes: false,
  maxChoices: Number.POSITIVE_INFINITY,
  feedback: {
    started: 'engine',
    firstToken: 'stream',
    evictions: 'kv-events',
    loadSignal: true,
    tokens: 'usage',
    note: "evictions as events need `preble engine --kv-events` and the replica's kvEvents:",
  },
  shapeBody: withStreamUsage,
  countsFrom: openAiCounts,
  prefillSeconds: (r) => msToSeconds(r.preble_timing?.prefill_ms),
  loadSignal: (text, capacity) =>
    gaugeSignal(text, capacity, {
      ...vllmNames,
      capacity: 'preble:kv_capacity_tokens',
      queued: 'preble:queued_prefill_tokens',
      free: 'preble:free_kv_tokens',
    }),
  tokenize: openAiTokenize,
};

const vllm: Dialect = {
  name: 'vllm',
  exclusivePrefixes: false,
  maxChoices: Number.POSITIVE_INFINITY,
  feedback: {
    started: 'engine-opt-in',
    firstToken: 'stream',
    evictions: 'kv-events',
    loadSignal: true,
    tokens: 'usage',
    note:
      'started needs `vllm serve --enable-per-request-metrics` (newer vLLM); cached tokens need ' +
      "--enable-prompt-tokens-details; evictions as events need --kv-events-config and the replica's kvEvents:",
  },
  // `include_metrics` asks for the per-request `metrics` (ignored by vLLM versions without them).
  shapeBody: (body) => ({ include_metrics: true, ...withStreamUsage(body) }),
  countsFrom: openAiCounts,
  prefillSeconds: (r) => msToSeconds(r.metrics?.time_to_first_token_ms),
  loadSignal: (text, capacity) => gaugeSignal(text, capacity, vllmNames),
  tokenize: openAiTokenize,
};

const sglang: Dialect = {
  name: 'sglang',
  exclusivePrefixes: false,
  maxChoices: Number.POSITIVE_INFINITY,
  feedback: {
    started: 'first-token',
    firstToken: 'stream',
    evictions: 'kv-events',
    loadSignal: true,
    tokens: 'usage',
    note: "SGLang's OpenAI API reports no per-request queue time; evictions as events need --kv-events-config",
  },
  shapeBody: withStreamUsage,
  countsFrom: openAiCounts,
  prefillSeconds: () => undefined,
  loadSignal: (text, capacity) =>
    gaugeSignal(text, capacity, {
      running: 'sglang:num_running_reqs',
      waiting: 'sglang:num_queue_reqs',
      usage: ['sglang:token_usage'],
      capacity: 'sglang:max_total_num_tokens',
    }),
  tokenize: openAiTokenize,
};

/**
 * llama.cpp's llama-server: one choice per request, prefix reuse is asked for per request (`cache_prompt`), cached tokens
 * come in `usage` or its own `timings.cache_n`, load in `llamacpp:` gauges (no KV gauge: requests
 * waiting for a slot are `requests_deferred`), and /tokenize takes `content`.
 */
const llamacpp: Dialect = {
  name: 'llamacpp',
  exclusivePrefixes: true,
  // llama-server refuses n > 1 ("Only one completion choice is allowed"), in some versions as a 500
  // that would count against its breaker: the gateway answers the 400 itself.
  maxChoices: 1,
  feedback: {
    started: 'engine',
    firstToken: 'stream',
    evictions: 'cached-tokens',
    loadSignal: true,
    tokens: 'usage-or-timings',
    note: 'started from timings.prompt_ms (asked per token); llama-server publishes no KV events',
  },
  shapeBody(body) {
    const shaped = withStreamUsage(body);
    if (shaped['cache_prompt'] === undefined) shaped['cache_prompt'] = true;
    // Timings on every chunk: the first token's carries prompt_ms (slot start to first token).
    if (shaped['timings_per_token'] === undefined) shaped['timings_per_token'] = true;
    return shaped;
  },
  prefillSeconds: (r) => msToSeconds(r.timings?.prompt_ms),
  countsFrom(report, fallbackPromptTokens) {
    const counts = openAiCounts(report, fallbackPromptTokens);
    const t = report.timings;
    if (report.usage?.prompt_tokens_details?.cached_tokens === undefined && t?.cache_n !== undefined)
      return { ...counts, cachedTokens: t.cache_n };
    return counts;
  },
  loadSignal: (text, capacity) =>
    gaugeSignal(text, capacity, {
      running: 'llamacpp:requests_processing',
      waiting: 'llamacpp:requests_deferred',
    }),
  async tokenize(input, _model, post) {
    // Chats: the server's own template first, so the ids are those of the prompt it will cache.
    const content =
      input.kind === 'chat'
        ? ((await post('/apply-template', { messages: input.messages })) as { prompt?: unknown }).prompt
        : input.prompt;
    if (typeof content !== 'string') throw new Error('replica /apply-template did not answer a prompt');
    return tokensOf(
      await post('/tokenize', { content, add_special: true, parse_special: true }),
      '/tokenize',
    );
  },
};

const dialects: Readonly<Record<DialectName, Dialect>> = { preble, vllm, sglang, llamacpp };

export function dialectOf(name: DialectName): Dialect {
  return dialects[name];
}
