import { truthOf } from './oracle.ts';
import { midpoint, nextBucket } from './repredict.ts';
import { requestRandom } from './request-random.ts';
import type { LengthPredictor } from './types.ts';

export interface OracleBucketOptions {
  /** Bucket width in tokens: bucket k is `[k g, (k+1) g)`. */
  readonly granularity?: number;
  /** Probability that the predicted bucket is the true one. */
  readonly accuracy?: number;
  readonly seed?: number;
}

export const oracleBucketDefaults: Required<OracleBucketOptions> = {
  granularity: 200,
  accuracy: 0.749,
  seed: 0,
};

/**
 * TetriInfer's measured classifier accuracies by granularity (seed 004, TetriInfer section 5:
 * "58.9%, 74.9%, and 85%" for 100, 200 and 400 tokens; an OPT-125M classifier trained on 75K
 * ShareGPT prompts to speculate OPT-13B's output lengths). The `tetriinfer-G` presets.
 */
export const TETRIINFER_ACCURACY = { 100: 0.589, 200: 0.749, 400: 0.85 } as const;

/**
 * `oracle-bucket`: a TetriInfer-like length classifier. The true bucket comes out with probability
 * `accuracy`; a wrong prediction lands in a neighbouring bucket, one below or one above with equal
 * chance (one above from bucket 0). TetriInfer reports only the top-1 accuracy; we assume its errors
 * are adjacent classes, the usual confusion of an ordinal classifier. The bucket width is the
 * granularity (TetriInfer's example, "using a granularity of 100, responses with token lengths between
 * 0 to 200 are labeled with 0", reads as a width of 200; we take its name at its word). Point estimate: the bucket's
 * middle. Outrun (reaching the bucket's top): the next bucket up (repredict.ts).
 */
export function createOracleBucketPredictor(
  options: Required<OracleBucketOptions>,
  name = 'oracle-bucket',
): LengthPredictor {
  const g = options.granularity;
  if (!Number.isInteger(g) || g <= 0)
    throw new Error(`${name}: granularity must be a positive integer, got ${g}`);
  if (!(options.accuracy >= 0 && options.accuracy <= 1)) {
    throw new Error(`${name}: accuracy must lie in [0, 1], got ${options.accuracy}`);
  }
  return {
    name,
    predict(query) {
      const trueBucket = Math.floor(truthOf(query, name) / g);
      const random = requestRandom(options.seed, query.id);
      let k = trueBucket;
      if (random.next() >= options.accuracy) k = k === 0 || random.next() < 0.5 ? k + 1 : k - 1;
      return { tokens: midpoint(k * g, (k + 1) * g), bucket: { low: k * g, high: (k + 1) * g } };
    },
    repredict: (_query, generated, previous) => nextBucket(previous, generated),
  };
}
