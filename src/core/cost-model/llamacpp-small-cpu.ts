import type { KvMemory } from './instance.ts';
import { sumLine } from './series.ts';
import {
  type BatchShape,
  type CostModel,
  type GpuShape,
  type ModelShape,
  prefillByIteration,
  splitBatch,
} from './types.ts';

/**
 * Coefficients (seconds) of one llama-server iteration on CPU, llama.cpp's mechanism:
 *   perIteration + perNewToken * newTokens + perContextToken * seqTokens + perRequest * requests
 *   + perTiledPair * tiledPairs + perRowPair * rowPairs.
 * Attention pairs are query-key pairs, counted causally. llama.cpp runs a prefill in micro-batches of 512
 * tokens, and its CPU flash attention computes a micro-batch of 64 rows or more in 64-row tiles (a GEMM
 * per tile, the last tile padded) but a smaller one row by row, each row reading its whole context at
 * several times the cost per pair. Decode rows always go row by row.
 * - perNewToken: the linear layers, per token computed;
 * - perContextToken: per token of every request's sequence, once per iteration;
 * - perRequest: per request per iteration (KV padded to 256 cells, logits, sampling).
 */
export interface LlamaCppCpuCoefficients {
  readonly perIteration: number;
  readonly perNewToken: number;
  readonly perContextToken: number;
  readonly perTiledPair: number;
  readonly perRowPair: number;
  readonly perRequest: number;
}

/** llama.cpp's micro-batch (-ub, default 512) and CPU flash-attention tile (ggml-cpu flash_attn_ext_tiled). */
export const UBATCH_TOKENS = 512;
export const ATTENTION_TILE_ROWS = 64;

/** Causal pairs of `rows` query rows after `context` keys. */
const causalPairs = (rows: number, context: number) => rows * context + (rows * (rows + 1)) / 2;
const paddedRows = (rows: number) => Math.ceil(rows / ATTENTION_TILE_ROWS) * ATTENTION_TILE_ROWS;

/** Visit a prefill's micro-batches: rows, and keys before them. */
function forEachUbatch(
  newTokens: number,
  cached: number,
  visit: (rows: number, context: number) => void,
): void {
  for (let done = 0; done < newTokens; done += UBATCH_TOKENS) {
    visit(Math.min(UBATCH_TOKENS, newTokens - done), cached + done);
  }
}

/** llama.cpp's attention pairs: in (padded) tiles and row by row. The fit's terms; not monotone. */
export function attentionPairs(batch: BatchShape): { tiled: number; rowByRow: number } {
  const { prefillNew, prefillCached, decodePairs } = splitBatch(batch);
  let tiled = 0;
  let rowByRow = decodePairs;
  forEachUbatch(prefillNew, prefillCached, (rows, context) => {
    if (rows < ATTENTION_TILE_ROWS) rowByRow += causalPairs(rows, context);
    else tiled += causalPairs(paddedRows(rows), context);
  });
  return { tiled, rowByRow };
}

/** The terms the coefficients multiply in llama.cpp's mechanism, in LlamaCppCpuCoefficients order. */
export function llamaCppIterationTerms(batch: BatchShape): [number, number, number, number, number, number] {
  const { tiled, rowByRow } = attentionPairs(batch);
  return [1, batch.newTokens, batch.seqTokens, tiled, rowByRow, batch.requests];
}

/**
 * Attention seconds of one prefill micro-batch, made monotone. In llama.cpp, 63 rows on a long context
 * take about 4x the attention of 64 (row by row vs tiled). A cost model must not fall as work grows, so
 * both sides meet at the geometric mean of the two: rows below 64 cost at most that, 64 or more at least
 * that. Relative error at the cliff is the same both ways; away from it the cost is llama.cpp's.
 */
function ubatchAttention(c: LlamaCppCpuCoefficients, rows: number, context: number): number {
  const below = c.perRowPair * causalPairs(ATTENTION_TILE_ROWS - 1, context);
  const above = c.perTiledPair * causalPairs(ATTENTION_TILE_ROWS, context);
  // Never under a single row's cost, so 2 rows cost at least what 1 (a decode row) does.
  const cliff = Math.max(Math.sqrt(below * above), c.perRowPair * causalPairs(1, context));
  return rows < ATTENTION_TILE_ROWS
    ? Math.min(c.perRowPair * causalPairs(rows, context), cliff)
    : Math.max(c.perTiledPair * causalPairs(paddedRows(rows), context), cliff);
}

export function llamaCppCpuCostModel(
  name: string,
  coefficients: LlamaCppCpuCoefficients,
  memory: KvMemory,
): CostModel {
  const c = coefficients;
  const iterationTime = (batch: BatchShape): number => {
    if (batch.requests <= 0) return 0;
    const { prefillNew, prefillCached, decodePairs } = splitBatch(batch);
    let time =
      c.perIteration +
      c.perNewToken * batch.newTokens +
      c.perContextToken * batch.seqTokens +
      c.perRequest * batch.requests +
      c.perRowPair * decodePairs;
    forEachUbatch(prefillNew, prefillCached, (rows, context) => {
      time += ubatchAttention(c, rows, context);
    });
    return time;
  };
  return {
    name,
    kvBytesPerToken: memory.kvBytesPerToken,
    kvCapacityTokens: memory.kvCapacityTokens,
    iterationTime,
    prefillTime: prefillByIteration(iterationTime),
    // A decode step at sequence length s is one row reading s keys: step j costs the line at s = context + j.
    decodeTime: (outputTokens, contextTokens) =>
      outputTokens <= 0
        ? 0
        : sumLine(
            {
              intercept: c.perIteration + c.perNewToken + c.perRequest,
              slope: c.perContextToken + c.perRowPair,
            },
            contextTokens + 1,
            contextTokens + outputTokens,
          ),
  };
}

/**
 * The `small` model that src/real/gguf writes (embedding 512, 6 layers, 8 heads, 4 KV heads, feed-forward
 * 1408, 354-token character vocabulary): 18,063,872 parameters in Q8_0 (34 bytes per 32), f16 KV.
 */
export const LLAMACPP_SMALL_MODEL: ModelShape = {
  name: 'llamacpp-small',
  params: 18_063_872,
  layers: 6,
  hidden: 512,
  heads: 8,
  kvHeads: 4,
  headDim: 64,
  bytesPerParam: 34 / 32,
  bytesPerKv: 2,
};

/**
 * The CPU a replica runs on, standing in for a GPU in the instance: one thread (-t 1 -tb 1) of the 2-core
 * AMD EPYC (AVX-512) dev machine. Only the name is used; capacity comes from -c, not from memory.
 */
export const ONE_EPYC_THREAD: GpuShape = {
  name: 'cpu-epyc-1-thread',
  memoryBytes: 24 * 2 ** 30,
  peakFlops: 0,
  bandwidth: 0,
};

/** The replica's -c: 16,384 tokens of KV (4 slots of 4,096). */
export const LLAMACPP_SMALL_CPU_KV_TOKENS = 16_384;

/**
 * Fitted by `npx tsx scripts/calibrate-llamacpp.ts --preset small --threads 1 --out
 * docs/results/calibration/llamacpp-small-cpu.json` (fit and per-point errors in llamacpp-small-cpu.md there):
 * llama-server's own timings (prompt_ms, predicted_ms) of one replica at -t 1 -tb 1 -np 4 -c 16384
 * --cache-ram 0 on the shared 2-core dev machine; 68 points (unique prompts of 41-3,501 tokens, suffixes of
 * 8-1,000 on 251-3,001 cached, decode at 101-3,501 with 1-4 requests at once). Relative error of this
 * preset: max 75.7% and mean 9.6% over all points; max 21.8% (mean 5.6%) on the 54 points away from the
 * 64-row cliff, where the 14 others are off by up to +76% / -47% (see ubatchAttention). perIteration came
 * out 0 (non-negative least squares): per-iteration overhead hides in perRequest.
 */
export const LLAMACPP_SMALL_CPU_COEFFICIENTS: LlamaCppCpuCoefficients = {
  perIteration: 0,
  perNewToken: 5.824021298019093e-4,
  perContextToken: 1.0558559252365865e-6,
  perTiledPair: 3.298746631763939e-7,
  perRowPair: 1.6147005560229877e-6,
  perRequest: 5.581489782547688e-4,
};
