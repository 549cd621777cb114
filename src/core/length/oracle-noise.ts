import { truthOf } from './oracle.ts';
import { doubled } from './repredict.ts';
import { requestRandom } from './request-random.ts';
import type { LengthPredictor } from './types.ts';

export interface OracleNoiseOptions {
  /** Standard deviation of the log-scale error: prediction = truth x exp(sigma N(0,1)); 0 is exact. */
  readonly sigma?: number;
  readonly seed?: number;
}

export const oracleNoiseDefaults: Required<OracleNoiseOptions> = { sigma: 0.5, seed: 0 };

/**
 * `oracle-noise`: a point predictor whose error is multiplicative and unbiased in log space (median
 * the truth), a stand-in for a learned regressor of known quality. Outrun: doubling.
 */
export function createOracleNoisePredictor(options: Required<OracleNoiseOptions>): LengthPredictor {
  if (!(options.sigma >= 0) || !Number.isFinite(options.sigma)) {
    throw new Error(`oracle-noise: sigma must be a non-negative number, got ${options.sigma}`);
  }
  return {
    name: 'oracle-noise',
    predict(query) {
      const truth = truthOf(query, 'oracle-noise');
      const noise = Math.exp(options.sigma * requestRandom(options.seed, query.id).normal());
      return { tokens: Math.max(1, Math.round(truth * noise)) };
    },
    repredict: (_query, generated, previous) => doubled(previous, generated),
  };
}
