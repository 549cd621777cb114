import {
  DEFAULT_MEMORY_FRACTION,
  type Instance,
  type InstanceCostModel,
  instanceKvMemory,
} from './instance.ts';
import { attentionFlopsPerPair, ROOFLINE_DEFAULTS, type RooflineOptions } from './roofline-defaults.ts';
import { type Line, sumMaxOfLines } from './series.ts';
import { type BatchShape, prefillByIteration } from './types.ts';

export interface ParallelOptions extends Omit<RooflineOptions, 'gpuCount'> {
  /** Tensor-parallel degree (GPUs per stage). Default 1. */
  readonly tp?: number;
  /** Pipeline stages. Default 1. */
  readonly pp?: number;
  /** Micro-batches a batch is split into across the stages (at most one per request). Default pp. */
  readonly microBatches?: number;
  /** Bytes/s per direction per GPU between the GPUs; default the GPU's `interconnectBandwidth`. */
  readonly interconnectBandwidth?: number;
  /** Share of that bandwidth a collective or a send reaches. */
  readonly interconnectEfficiency?: number;
  /** Fixed seconds of one all-reduce or one stage-to-stage send (launch and synchronisation). */
  readonly commLatencySeconds?: number;
}

/**
 * Communication defaults, assumptions rather than fits: 70% of the link (the share nccl-tests' bus
 * bandwidth reaches on NVLink machines for large messages, and the roofline's HBM share), and 10 us per
 * collective, the order of a small-message NCCL all-reduce inside a node. Decode steps, whose
 * all-reduces are a few KB, pay the latency, not the bandwidth: 2 x layers x 10 us per step.
 */
export const PARALLEL_DEFAULTS = {
  interconnectEfficiency: 0.7,
  commLatencySeconds: 10e-6,
} as const;

/** A GPU without a listed link (a stand-in) is read as PCIe 4.0 x16. */
const FALLBACK_INTERCONNECT = 32e9;

/**
 * The roofline of `roofline.ts` over tp x pp GPUs, with the communication tensor and pipeline
 * parallelism add. `rooflineCostModel` is this with a free link (no communication), so with tp = pp = 1 the
 * two are the same model.
 *
 * One stage (layers / pp, rounded up: the slowest stage sets the pace) on tp GPUs runs a micro-batch in
 *   max(FLOPs / (tp x peak x MFU), bytes / (tp x bandwidth x efficiency)) x stage share
 *   + all-reduces: 2 per layer (Megatron: after attention and after the MLP), each
 *     latency + 2 (tp - 1) / tp x new tokens x hidden x 2 B / (link x efficiency)   (ring all-reduce)
 *   + the send of its activations to the next stage: latency + new tokens x hidden x 2 B / (link x efficiency)
 * with FLOPs and bytes as in the roofline (the stage's share of the weights, of the KV read and written).
 *
 * A batch of R requests is split into m = min(microBatches, R) equal micro-batches (its sums divided
 * by m). Synchronous pipeline, no interleaving:
 * - a batch with prefill work fills and drains the pipeline: (pp + m - 1) stage passes of a micro-batch,
 *   the bubble of GPipe (a request alone: pp passes, the whole model in sequence);
 * - a decode-only batch is pipelined across iterations (vLLM's and Vidur's PP decode): while micro-batch
 *   i runs on stage k, the others run on the other stages, so each request gets a token every
 *   max(m, pp) passes: m passes when the pipeline is full, pp when fewer micro-batches than stages.
 * Plus the per-iteration overhead, once.
 *
 * Memory: weights and KV split evenly over the tp x pp GPUs (instance.ts); an uneven layer split that
 * overfills one stage is not detected. Not modelled: the embedding and LM head living on the first and last
 * stages (their FLOPs and bytes are spread with the rest), overlap of communication with compute, links
 * between nodes (give `interconnectBandwidth` for those).
 */
export function parallelCostModel(options: ParallelOptions): InstanceCostModel {
  const { model, gpu } = options;
  const tp = options.tp ?? 1;
  const pp = options.pp ?? 1;
  for (const [field, value] of [
    ['tp', tp],
    ['pp', pp],
  ] as const) {
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`${field} must be an integer >= 1, got ${value}`);
  }
  if (pp > model.layers) throw new Error(`pp (${pp}) exceeds ${model.name}'s ${model.layers} layers`);
  const microBatches = options.microBatches ?? pp;
  if (!Number.isInteger(microBatches) || microBatches < 1) {
    throw new Error(`microBatches must be an integer >= 1, got ${microBatches}`);
  }
  const prefillMfu = options.prefillMfu ?? ROOFLINE_DEFAULTS.prefillMfu;
  const decodeMfu = options.decodeMfu ?? ROOFLINE_DEFAULTS.decodeMfu;
  const overhead = options.overheadSeconds ?? ROOFLINE_DEFAULTS.overheadSeconds;
  const bandwidth =
    gpu.bandwidth * tp * (options.bandwidthEfficiency ?? ROOFLINE_DEFAULTS.bandwidthEfficiency);
  const link =
    (options.interconnectBandwidth ?? gpu.interconnectBandwidth ?? FALLBACK_INTERCONNECT) *
    (options.interconnectEfficiency ?? PARALLEL_DEFAULTS.interconnectEfficiency);
  const latency = options.commLatencySeconds ?? PARALLEL_DEFAULTS.commLatencySeconds;
  const instance: Instance = {
    model,
    gpu,
    gpuCount: tp * pp,
    ...(pp > 1 ? { pipelineStages: pp } : {}),
    memoryFraction: options.memoryFraction ?? DEFAULT_MEMORY_FRACTION,
  };
  const memory = instanceKvMemory(instance, options.kvCapacityTokens);
  const weightBytes = model.params * model.bytesPerParam;
  const pairFlops = attentionFlopsPerPair(model);
  const kvBytes = memory.kvBytesPerToken;
  const stageLayers = Math.ceil(model.layers / pp);
  // The slowest stage's share of the model (1 without pipeline stages).
  const share = stageLayers / model.layers;
  const activationBytes = model.hidden * model.bytesPerParam;
  const allReduceBytes = tp > 1 ? (2 * (tp - 1) * activationBytes) / tp : 0;

  /** Communication of one stage pass of a micro-batch with `newTokens` new tokens. */
  const comm = (newTokens: number): number =>
    (tp > 1 ? 2 * stageLayers * (latency + (allReduceBytes * newTokens) / link) : 0) +
    (pp > 1 ? latency + (activationBytes * newTokens) / link : 0);

  /** One stage pass of micro-batch `b`: the roofline's arms, its share, and its communication. */
  const stagePass = (b: BatchShape, mfu: number): number => {
    const flops = 2 * model.params * b.newTokens + pairFlops * b.newTimesSeq;
    const bytes = weightBytes + kvBytes * (b.seqTokens + b.newTokens);
    return Math.max(flops / (gpu.peakFlops * tp * mfu), bytes / bandwidth) * share + comm(b.newTokens);
  };

  const iterationTime = (batch: BatchShape): number => {
    if (batch.requests <= 0) return 0;
    const decodeOnly = batch.newTokens <= batch.requests;
    const m = Math.min(microBatches, batch.requests);
    const micro =
      m === 1
        ? batch
        : {
            requests: batch.requests / m,
            newTokens: batch.newTokens / m,
            seqTokens: batch.seqTokens / m,
            newTimesSeq: batch.newTimesSeq / m,
          };
    const passes = decodeOnly ? Math.max(m, pp) : pp + m - 1;
    return passes * stagePass(micro, decodeOnly ? decodeMfu : prefillMfu) + overhead;
  };

  // A request decoding alone: pp passes per token; both roofline arms are lines in the sequence length.
  const decodeFlopRate = gpu.peakFlops * tp * decodeMfu;
  const perToken = pp * share;
  const fixed = overhead + pp * comm(1);
  const decodeCompute: Line = {
    intercept: fixed + (perToken * (2 * model.params)) / decodeFlopRate,
    slope: (perToken * pairFlops) / decodeFlopRate,
  };
  const decodeMemory: Line = {
    intercept: fixed + (perToken * (weightBytes + kvBytes)) / bandwidth,
    slope: (perToken * kvBytes) / bandwidth,
  };

  return {
    name: options.name ?? `roofline:${model.name}@${gpu.name}x${tp}${pp > 1 ? `p${pp}` : ''}`,
    instance,
    kvBytesPerToken: memory.kvBytesPerToken,
    kvCapacityTokens: memory.kvCapacityTokens,
    iterationTime,
    prefillTime: prefillByIteration(iterationTime),
    decodeTime: (outputTokens, contextTokens) =>
      outputTokens <= 0
        ? 0
        : sumMaxOfLines(decodeCompute, decodeMemory, contextTokens + 1, contextTokens + outputTokens),
  };
}
