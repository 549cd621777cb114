import type { KvMemory } from './instance.ts';
import { type Line, sumLine } from './series.ts';
import { type BatchShape, type CostModel, prefillByIteration } from './types.ts';

/*
 * Preble's SGLang (FlashInfer) regression for Mistral-7B on one A6000, from WukLab/preble
 * preble/benchmarks/exp_configs/model_equations.py (mistral_7b_A6000_sglang_extend_flashinfer for batches
 * with prefill work, mistrial_7b_A6000_sglang_decode_flashinfer for decode-only batches). The authors fit in
 * ms; the constants below stay in ms and the result is converted to seconds once.
 *
 * Mapping onto BatchShape:
 * - linear layers: a piecewise function of all new tokens in the batch (the authors' num_batched_tokens);
 * - decode attention: a function of the sum of sequence lengths (their total_context). Their halving when the
 *   batch's unique KV is small (shared prefixes) needs the unique-KV count, which BatchShape does not carry:
 *   we never halve, which is conservative by at most half this term (< 1 ms below 5k context);
 * - extend attention: the authors add it per request whose new x seq exceeds 2^20. We evaluate it once
 *   for the batch as if it were one request with ext = newTokens and seq = newTimesSeq / newTokens (the
 *   new-token-weighted mean sequence length), and only when the batch has prefill work
 *   (newTokens > requests), because their decode regression has no such term. For a single request this is
 *   exactly their formula; a batch holding k large prefill chunks undercounts the 1.75e-3 * seq term k - 1
 *   times (a few % of the iteration).
 * - everything is divided by 0.9, as the authors do for both regressions.
 */

const SHORT_BATCH_TOKENS = 192;
const LONG_BATCH_TOKENS = 384;
/** Linear layers below 192 batched tokens: flat, memory-bound on the weights. */
const SHORT_BATCH_MS = 22;
const LONG_BATCH_MS_PER_TOKEN = 0.10842571;
const LONG_BATCH_MS_INTERCEPT = 4.209777054806409;
const DECODE_ATTENTION_FLOOR_CONTEXT = 1024;
const EXTEND_ATTENTION_THRESHOLD = 2 ** 20;
const FIT_INFLATION = 0.9;
const MS = 1e-3;

function longBatchMs(tokens: number): number {
  return LONG_BATCH_MS_INTERCEPT + LONG_BATCH_MS_PER_TOKEN * tokens;
}

/**
 * The authors' middle piece (-118 + 1.25 n - 2.56e-3 n^2 for 192 <= n < 384) peaks at n = 244 and falls to
 * -14.8 ms at 383, so it is replaced by the straight line from 22 ms at 192 to the long-batch line at 384:
 * continuous at both ends and non-decreasing everywhere.
 */
function linearLayersMs(batchedTokens: number): number {
  if (batchedTokens >= LONG_BATCH_TOKENS) return longBatchMs(batchedTokens);
  if (batchedTokens < SHORT_BATCH_TOKENS) return SHORT_BATCH_MS;
  const share = (batchedTokens - SHORT_BATCH_TOKENS) / (LONG_BATCH_TOKENS - SHORT_BATCH_TOKENS);
  return SHORT_BATCH_MS + share * (longBatchMs(LONG_BATCH_TOKENS) - SHORT_BATCH_MS);
}

const DECODE_ATTENTION_FLOOR_MS = 0.32;
const DECODE_ATTENTION: Line = { intercept: 0.159, slope: 1.86e-4 };

function decodeAttentionMs(totalContext: number): number {
  if (totalContext <= DECODE_ATTENTION_FLOOR_CONTEXT) return DECODE_ATTENTION_FLOOR_MS;
  return DECODE_ATTENTION.intercept + DECODE_ATTENTION.slope * totalContext;
}

function extendAttentionMs(batch: BatchShape): number {
  if (batch.newTokens <= batch.requests || batch.newTimesSeq <= EXTEND_ATTENTION_THRESHOLD) return 0;
  const meanSeq = batch.newTimesSeq / batch.newTokens;
  return 1.13e-3 * batch.newTokens + 1.75e-3 * meanSeq + 2.19e-6 * batch.newTimesSeq;
}

function iterationTime(batch: BatchShape): number {
  if (batch.requests <= 0) return 0;
  const ms = linearLayersMs(batch.newTokens) + decodeAttentionMs(batch.seqTokens) + extendAttentionMs(batch);
  return (ms / FIT_INFLATION) * MS;
}

/**
 * Decode steps see seq = context + 1 .. context + outputTokens: a flat stretch up to 1024, then a line.
 * Sanity check of the authors' decode fit: 22 ms / 0.9 for the weights is a memory-bandwidth roofline
 * (14.5 GB / 768 GB/s = 18.9 ms) at 77% of the A6000's peak bandwidth.
 */
function decodeTime(outputTokens: number, contextTokens: number): number {
  if (outputTokens <= 0) return 0;
  const first = contextTokens + 1;
  const last = contextTokens + outputTokens;
  const floorSteps = Math.max(0, Math.min(last, DECODE_ATTENTION_FLOOR_CONTEXT) - first + 1);
  const attentionMs =
    floorSteps * DECODE_ATTENTION_FLOOR_MS +
    sumLine(DECODE_ATTENTION, Math.max(first, DECODE_ATTENTION_FLOOR_CONTEXT + 1), last);
  const ms = outputTokens * linearLayersMs(1) + attentionMs;
  return (ms / FIT_INFLATION) * MS;
}

export function prebleMistralA6000CostModel(memory: KvMemory): CostModel {
  return {
    name: 'mistral-7b-a6000',
    kvBytesPerToken: memory.kvBytesPerToken,
    kvCapacityTokens: memory.kvCapacityTokens,
    iterationTime,
    prefillTime: prefillByIteration(iterationTime),
    decodeTime,
  };
}
