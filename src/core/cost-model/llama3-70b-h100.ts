import { GPU_SHAPES } from './gpu-shapes.ts';
import type { KvMemory } from './instance.ts';
import type { LinearCoefficients } from './linear.ts';
import { MODEL_SHAPES } from './model-shapes.ts';
import { ROOFLINE_DEFAULTS, rooflineCostModel } from './roofline.ts';
import { type BatchShape, type CostModel, prefillByIteration, splitBatch } from './types.ts';

/**
 * Prefill: Preble's per-request SGLang (FlashInfer) fit for Llama-3-70B on H100 (WukLab/preble,
 * preble/benchmarks/exp_configs/model_equations.py, llama3_70b_H100_tp2_sglang_extend_flashinfer), in ms:
 * 18.667 + 0.07988 * ext + 0.002685 * seq + 7.443e-7 * ext * seq; converted here to seconds.
 * The authors measured one TP=2 instance; our instances are TP=4 (8 H100s as two instances), so these times
 * are likely pessimistic for our instances, while memory and capacity come from 4 x 80 GB.
 * The authors charge the intercept once per request; as an iteration cost it is charged once per batch.
 */
export const LLAMA3_70B_H100_COEFFICIENTS: LinearCoefficients = {
  a: 0.018667307208113756,
  b: 7.98791064e-5,
  c: 2.68531603e-6,
  d: 7.44344923e-10,
};

export const LLAMA3_70B_H100_GPU_COUNT = 4;

/**
 * The `llama3-70b-h100` preset: the published fit for prefill, the roofline for decode.
 *
 * Why not the fit for decode: it is an extend (prefill) regression of requests run alone, and its
 * c * seq term (2.685e-3 ms per context token) is a regression term of those runs, not a KV read. Charged
 * to every decode row of a batch it made one decode step of 64 requests at 4k context take 728 ms, 43x the
 * time to read the weights and that KV once at 4 x 3.35 TB/s (16.9 ms): the KV read is 327,680 B per token
 * / 13.4 TB/s = 2.4e-8 s, 110x less than c. The authors have no decode regression for this setup: the only
 * one in model_equations.py is Mistral-7B on A6000 (mistrial_7b_A6000_sglang_decode_flashinfer).
 *
 * Decode-only batches (newTokens <= requests): the roofline of Llama-3-70B on 4 H100 with ROOFLINE_DEFAULTS
 * (70% of peak bandwidth, decode MFU 0.3, 0.5 ms per iteration): 15.5 ms + 3.5e-8 s per context token while
 * memory-bound, which holds up to about 150 requests at 512 context, 290 at 2k and any batch from about 3.5k
 * on; larger batches are compute-bound at 0.119 ms per request. Cross-check: vidur's H100 profile of Llama-2-70B (the same layer shapes: 80 layers,
 * hidden 8192, FFN 28672, 64 heads, 8 KV heads) at TP 4 measures 14.86 ms per iteration in the non-attention
 * ops for 1..64 tokens (`npx tsx scripts/fit-vidur.ts
 * ../shared/data/vidur-profiling/h100/meta-llama/Llama-2-70b-hf/mlp.csv --tp 4 --layers 80`); the roofline
 * reads the weights in 15.04 ms. Neither counts the tensor-parallel all-reduces, so steps are optimistic by
 * that much: `roofline:llama3-70b@h100x4` (parallel.ts) adds them, 2 x 80 x 10 us = 1.6 ms per decode step;
 * this preset keeps the roofline without them, as its published reports were made.
 *
 * Batches with prefill work: the published fit for the prefill (splitBatch reads the batch as one prefill
 * beside decodes), plus the decode rows: their tokens at b as before, their context at the roofline's KV-read
 * rate instead of c, and the d term over all pairs. Exact for a request alone (the published fit) and for one
 * prefill beside decodes. Several prefills are read as one of their weighted mean length, so c * seq is
 * charged once, not per prefill (under by 11 ms per further prefill at 4k). Such a batch costs at least
 * the decode-only batch of the same decodes up to about 460 of them at short context, more at longer (where
 * the roofline's 0.119 ms per request passes the fit's intercept and 0.080 ms per token).
 */
export function prebleLlama3H100CostModel(memory: KvMemory): CostModel {
  const model = MODEL_SHAPES['llama3-70b'];
  const gpu = GPU_SHAPES['h100-80g'];
  const gpuCount = LLAMA3_70B_H100_GPU_COUNT;
  const decode = rooflineCostModel({ model, gpu, gpuCount, kvCapacityTokens: memory.kvCapacityTokens });
  const kvReadPerToken =
    memory.kvBytesPerToken / (gpu.bandwidth * gpuCount * ROOFLINE_DEFAULTS.bandwidthEfficiency);
  const { a, b, c, d } = LLAMA3_70B_H100_COEFFICIENTS;

  const iterationTime = (batch: BatchShape): number => {
    if (batch.requests <= 0) return 0;
    if (batch.newTokens <= batch.requests) return decode.iterationTime(batch);
    const { prefillNew, prefillCached, decodePairs } = splitBatch(batch);
    const prefillSeq = prefillNew + prefillCached;
    return a + b * batch.newTokens + c * prefillSeq + kvReadPerToken * decodePairs + d * batch.newTimesSeq;
  };

  return {
    name: 'llama3-70b-h100',
    kvBytesPerToken: memory.kvBytesPerToken,
    kvCapacityTokens: memory.kvCapacityTokens,
    iterationTime,
    prefillTime: prefillByIteration(iterationTime),
    decodeTime: decode.decodeTime,
  };
}
