import type { DecodeAdmission, ReserveFrom } from '../../../replica-queue/tetri-decode-admission.ts';
import type { PrefillOrder } from '../../../replica-queue/tetri-prefill-batch.ts';

/** How a prefill instance's dispatcher picks the decode instance (TetriInfer §3.3.4, Figure 19). */
export type DecodeDispatch = 'power-of-two' | 'random' | 'imbalance';

/**
 * TetriInfer's knobs, each defaulting to the paper's value (or, where it gives none, ours, said so).
 * The engine-side ones (chunk, prefill order, decode admission) reach the engines through the
 * registry row; the rest are the router's.
 */
export interface TetriInferOptions {
  /** ChunkSize: prefill tokens per prefill-instance iteration (512: the knee for OPT-13B, §3.3.3). */
  readonly chunkSize?: number;
  /** Pad the last, partial chunk to ChunkSize (§3.3.3: "we will pad it to ChunkSize with zeros"). */
  readonly padChunks?: boolean;
  /** The prefill scheduler's order (§3.3.1; SJF is the paper's default). */
  readonly prefillOrder?: PrefillOrder;
  /** PrefillSchedBatch: raw requests sorted at a time (16; §5 also tries 128). */
  readonly prefillSchedBatch?: number;
  /** The decode instances' admission (§3.4; reserve-dynamic is the paper's). */
  readonly decodeAdmission?: DecodeAdmission;
  /** The dispatcher (§3.3.4: power-of-two; random and imbalance are Figure 19's baselines). */
  readonly dispatch?: DecodeDispatch;
  /** A decode is heavy past this many predicted output tokens (§5.1: 128, ShareGPT's median answer). */
  readonly heavyDecodeTokens?: number;
  /** Predicted output when a request carries no prediction (ours: the heavy threshold, ShareGPT's median). */
  readonly defaultOutputTokens?: number;
  /** Seconds between the cluster monitor's load broadcasts to the dispatchers (§3.2: "e.g., every 100 ms"). */
  readonly loadBroadcastSeconds?: number;
  /** Flip an instance idle this long while the other pool is busy (§3.5's example: a minute); 0 never flips. */
  readonly flipIdleSeconds?: number;
  /** The flip itself, after the drain (§3.5: "roughly 5 to 7 ms"; the midpoint). */
  readonly flipDelaySeconds?: number;
  /** Seed of the dispatcher's random picks (defaults to the run's --seed). */
  readonly seed?: number;
  /**
   * false: the prefill instances batch prompts up to `chunkSize` tokens without chunking, the prompt
   * that crosses it whole (vLLM's fixed batches, the baseline of §5.2.1's Figure 16); no padding.
   */
  readonly chunkedPrefill?: boolean;
  /** Decode admission counts a bucketed prediction from its lower end (§5.2.3) or, `point`, its middle (ours). */
  readonly reserveFrom?: ReserveFrom;
}

export const tetriInferDefaults: Required<TetriInferOptions> = {
  chunkSize: 512,
  padChunks: true,
  prefillOrder: 'sjf',
  prefillSchedBatch: 16,
  decodeAdmission: 'reserve-dynamic',
  dispatch: 'power-of-two',
  heavyDecodeTokens: 128,
  defaultOutputTokens: 128,
  loadBroadcastSeconds: 0.1,
  flipIdleSeconds: 60,
  flipDelaySeconds: 0.006,
  seed: 0,
  chunkedPrefill: true,
  reserveFrom: 'lower',
};

/**
 * One-line reason for a bad option (the registry checks types; these are the ranges). The engine-side
 * ones (prefill order and batch, decode admission) are checked by the `tetriinfer` queue policy.
 */
export function checkTetriInferOptions(o: Required<TetriInferOptions>): void {
  const fail = (what: string): never => {
    throw new Error(`tetriinfer: ${what}`);
  };
  if (!Number.isInteger(o.chunkSize) || o.chunkSize < 1)
    fail(`chunkSize must be an integer >= 1, got ${o.chunkSize}`);
  if (!['power-of-two', 'random', 'imbalance'].includes(o.dispatch))
    fail(`dispatch must be power-of-two, random or imbalance, got '${o.dispatch}'`);
  if (!(o.heavyDecodeTokens >= 0)) fail(`heavyDecodeTokens must be >= 0, got ${o.heavyDecodeTokens}`);
  if (!(o.defaultOutputTokens >= 1)) fail(`defaultOutputTokens must be >= 1, got ${o.defaultOutputTokens}`);
  if (!(o.loadBroadcastSeconds >= 0))
    fail(`loadBroadcastSeconds must be >= 0, got ${o.loadBroadcastSeconds}`);
  if (!(o.flipIdleSeconds >= 0)) fail(`flipIdleSeconds must be >= 0, got ${o.flipIdleSeconds}`);
  if (!(o.flipDelaySeconds >= 0)) fail(`flipDelaySeconds must be >= 0, got ${o.flipDelaySeconds}`);
}
