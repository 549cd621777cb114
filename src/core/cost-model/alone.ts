import type { CostModel } from './types.ts';

/** One request alone on an idle instance: time to first token, mean time between tokens, end to end. */
export interface AloneLatency {
  readonly ttft: number;
  /** Undefined with one output token (no gap between tokens). */
  readonly tbt?: number;
  readonly e2e: number;
}

export interface AloneRequest {
  readonly promptTokens: number;
  readonly outputTokens: number;
  /** Prompt tokens already in the instance's KV (default 0). A fully cached prompt recomputes its last token, as the engine does. */
  readonly cachedTokens?: number;
  /**
   * The engine's chunked-prefill budget: the prefill runs as chunks of at most this many tokens, one
   * iteration each, as the engine runs a request alone. Absent: one pass (Splitwise's reference machine).
   */
  readonly chunkTokens?: number;
}

/**
 * A request's latency with nothing else on its instance: its prefill (what is not cached), then its
 * output decoded one token a step. Splitwise's slowdowns are measured against it, and the latency floor
 * of a stream (`experiments/latency-floor.ts`) is made of it.
 */
export function aloneLatency(model: CostModel, r: AloneRequest): AloneLatency {
  const cached = Math.min(r.cachedTokens ?? 0, Math.max(0, r.promptTokens - 1));
  const ttft = prefillAlone(model, r.promptTokens - cached, cached, r.chunkTokens);
  const decode = r.outputTokens > 1 ? model.decodeTime(r.outputTokens - 1, r.promptTokens) : 0;
  return {
    ttft,
    ...(r.outputTokens > 1 ? { tbt: decode / (r.outputTokens - 1) } : {}),
    e2e: ttft + decode,
  };
}

function prefillAlone(
  model: CostModel,
  newTokens: number,
  cachedTokens: number,
  chunk: number | undefined,
): number {
  if (chunk === undefined || newTokens <= chunk) return model.prefillTime(newTokens, cachedTokens);
  let time = 0;
  for (let done = 0; done < newTokens; done += chunk)
    time += model.prefillTime(Math.min(chunk, newTokens - done), cachedTokens + done);
  return time;
}
