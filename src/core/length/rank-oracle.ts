import { truthOf } from './oracle.ts';
import { doubled } from './repredict.ts';
import { requestRandom } from './request-random.ts';
import type { LengthPredictor } from './types.ts';

export interface RankOracleOptions {
  /** Kendall's tau between the scores and the true lengths, in [-1, 1] (1: the true order). */
  readonly tau?: number;
  readonly seed?: number;
}

/** A round default, not a paper's figure: LTR's learned rankers are moderately, not fully, right. */
export const rankOracleDefaults: Required<RankOracleOptions> = { tau: 0.6, seed: 0 };

/**
 * `rank-oracle`: scores whose rank correlation with the truth is `tau`, for LTR (which needs an order,
 * not lengths). A Gaussian copula: z = the truth's log length standardised by the mean and spread of
 * the log lengths seen so far, score = rho z + sqrt(1 - rho^2) e with e ~ N(0,1) per request and
 * rho = sin(pi tau / 2), so that tau = (2/pi) asin(rho) holds exactly when log lengths are normal
 * (lognormal outputs; close otherwise). The score is mapped back to tokens, exp(mean + sd score), so
 * that the point estimate has the truth's scale; only its order is meant to be used. Before two
 * lengths are seen the spread is taken as 1. Outrun: doubling.
 */
export function createRankOraclePredictor(options: Required<RankOracleOptions>): LengthPredictor {
  if (!(options.tau >= -1 && options.tau <= 1)) {
    throw new Error(`rank-oracle: tau must lie in [-1, 1], got ${options.tau}`);
  }
  const rho = Math.sin((Math.PI * options.tau) / 2);
  const spread = Math.sqrt(Math.max(0, 1 - rho * rho));
  // Welford's running mean and variance of the log lengths predicted so far.
  let n = 0;
  let mean = 0;
  let m2 = 0;
  return {
    name: 'rank-oracle',
    predict(query) {
      const logTruth = Math.log(truthOf(query, 'rank-oracle'));
      n += 1;
      const delta = logTruth - mean;
      mean += delta / n;
      m2 += delta * (logTruth - mean);
      const sd = n < 2 || m2 === 0 ? 1 : Math.sqrt(m2 / (n - 1));
      const z = n < 2 ? 0 : (logTruth - mean) / sd;
      const score = rho * z + spread * requestRandom(options.seed, query.id).normal();
      return { tokens: Math.max(1, Math.round(Math.exp(mean + sd * score))) };
    },
    repredict: (_query, generated, previous) => doubled(previous, generated),
  };
}
