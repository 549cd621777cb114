import { doubled } from './repredict.ts';
import type { LengthPredictor, LengthQuery } from './types.ts';

/** The true output length of `query`, which only oracles may read; throws when the caller has none. */
export function truthOf(query: LengthQuery, predictor: string): number {
  const truth = query.trueOutputTokens;
  if (truth === undefined) throw new Error(`length predictor '${predictor}' needs the true output length`);
  return Math.max(1, truth);
}

/**
 * `oracle`: the exact output length (TRAIL+ in seed 002: TRAIL given the ground truth at no cost).
 * Never outrun by a request that ends at its true length; doubling covers a caller whose truth moved.
 */
export function createOraclePredictor(): LengthPredictor {
  return {
    name: 'oracle',
    predict: (query) => ({ tokens: truthOf(query, 'oracle') }),
    repredict: (_query, generated, previous) => doubled(previous, generated),
  };
}
