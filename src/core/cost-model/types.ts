/**
 * The cost model: how long model work takes on one instance, and how much KV memory it has.
 * Iteration time follows Preble and Vidur: a batch is described by sums over its requests, where
 * for request r in the batch `new_r` is the tokens computed this iteration (a prefill chunk, or 1
 * for a decode step) and `seq_r` is its sequence length after this iteration (cached + new).
 */
export interface BatchShape {
  /** Number of requests in the batch. */
  readonly requests: number;
  /** Sum of new_r. */
  readonly newTokens: number;
  /** Sum of seq_r. */
  readonly seqTokens: number;
  /** Sum of new_r * seq_r (the attention term). */
  readonly newTimesSeq: number;
}

export interface ModelShape {
  readonly name: string;
  readonly params: number;
  readonly layers: number;
  readonly hidden: number;
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** Bytes per parameter and per KV element (2 for fp16/bf16). */
  readonly bytesPerParam: number;
  readonly bytesPerKv: number;
  /** MLP (feed-forward) width; optional, for per-layer weight counts (validation against per-op profiles). */
  readonly mlpHidden?: number;
  /** Whether the MLP is gated (SwiGLU: three matrices) rather than two (OPT's fc1/fc2). */
  readonly gatedMlp?: boolean;
  /** Vocabulary size. */
  readonly vocab?: number;
  /** Where the shape comes from. */
  readonly source?: string;
}

export interface GpuShape {
  readonly name: string;
  readonly memoryBytes: number;
  /** Dense fp16/bf16 peak FLOP/s. */
  readonly peakFlops: number;
  /** Memory bandwidth in bytes/s. */
  readonly bandwidth: number;
  /**
   * GPU-to-GPU bandwidth inside a node, bytes/s per direction per GPU (NVLink, or PCIe where the GPU has
   * no NVLink): what a ring all-reduce and a pipeline send run at. Optional: stand-ins (CPU) have none.
   */
  readonly interconnectBandwidth?: number;
  /** The link that number describes (`NVLink 3`, `PCIe 4.0 x16`). */
  readonly interconnect?: string;
  /** Where the numbers come from. */
  readonly source?: string;
}

export interface CostModel {
  readonly name: string;
  /** Seconds for one engine iteration over the batch. */
  iterationTime(batch: BatchShape): number;
  /** Seconds to prefill `newTokens` on top of `cachedTokens` already in KV, alone in a batch. */
  prefillTime(newTokens: number, cachedTokens: number): number;
  /** Seconds to decode `outputTokens` tokens one by one, alone in a batch, starting at `contextTokens`. */
  decodeTime(outputTokens: number, contextTokens: number): number;
  /** KV-cache bytes per token: 2 x layers x kv heads x head dim x bytes, divided over tensor-parallel GPUs as a whole instance. */
  readonly kvBytesPerToken: number;
  /** KV-cache capacity of one instance, in tokens. */
  readonly kvCapacityTokens: number;
}

/** PrefillTime as one iteration with the request alone in the batch (0 when nothing is new). */
export function prefillByIteration(
  iterationTime: (batch: BatchShape) => number,
): (newTokens: number, cachedTokens: number) => number {
  return (newTokens, cachedTokens) =>
    newTokens <= 0 ? 0 : iterationTime(singleRequestBatch(newTokens, cachedTokens));
}

/** Batch shape of one request alone in a batch. */
export function singleRequestBatch(newTokens: number, cachedTokens: number): BatchShape {
  const seq = cachedTokens + newTokens;
  return { requests: 1, newTokens, seqTokens: seq, newTimesSeq: newTokens * seq };
}

/**
 * BatchShape has sums only, so we read a batch as at most one prefill beside decodes (one new token
 * each): the prefill has n = newTokens - requests + 1 new tokens and, from newTimesSeq - seqTokens =
 * (n - 1) * seq, sequence length seq. Exact for one request alone, decode-only batches and one prefill
 * beside decodes; several prefills in a batch are read as one.
 */
export function splitBatch(batch: BatchShape): {
  prefillNew: number;
  prefillCached: number;
  decodePairs: number;
} {
  const prefillNew = Math.max(1, batch.newTokens - batch.requests + 1);
  if (prefillNew === 1) return { prefillNew: 0, prefillCached: 0, decodePairs: batch.seqTokens };
  const seq = Math.min(
    batch.seqTokens,
    Math.max(prefillNew, (batch.newTimesSeq - batch.seqTokens) / (prefillNew - 1)),
  );
  return { prefillNew, prefillCached: seq - prefillNew, decodePairs: batch.seqTokens - seq };
}
