import { doubled } from './repredict.ts';
import type { LengthPredictor, LengthQuery } from './types.ts';

export interface HistoryOptions {
  /** Width of the input-length buckets, in prompt tokens: bucket k holds prompts in `[k w, (k+1) w)`. */
  readonly inputBucket?: number;
  /** The prediction before any history applies. */
  readonly prior?: number;
}

export const historyDefaults: Required<HistoryOptions> = { inputBucket: 512, prior: 256 };

interface Mean {
  sum: number;
  count: number;
}

/**
 * `history`: the mean output length of finished requests (`observe`) that resemble this one: of its
 * key portion (samples of one problem, steps of one agent, turns of one session) when that key has
 * finished before; else of its input-length bucket (Aladdin's "estimated output length of each
 * input length in the historical data"); else `prior`. Rounded to the nearest token. Outrun: doubling.
 */
export function createHistoryPredictor(options: Required<HistoryOptions>): LengthPredictor {
  const w = options.inputBucket;
  if (!Number.isInteger(w) || w <= 0)
    throw new Error(`history: inputBucket must be a positive integer, got ${w}`);
  if (!(options.prior >= 1) || !Number.isFinite(options.prior)) {
    throw new Error(`history: prior must be a number of at least 1, got ${options.prior}`);
  }
  const byKey = new Map<string, Mean>();
  const byBucket = new Map<number, Mean>();
  const bucketOf = (query: LengthQuery) => Math.floor(query.promptTokens / w);
  const add = <K>(map: Map<K, Mean>, key: K, value: number) => {
    const mean = map.get(key);
    if (mean === undefined) map.set(key, { sum: value, count: 1 });
    else {
      mean.sum += value;
      mean.count += 1;
    }
  };
  return {
    name: 'history',
    predict(query) {
      const mean =
        (query.key === undefined ? undefined : byKey.get(query.key)) ?? byBucket.get(bucketOf(query));
      const estimate = mean === undefined ? options.prior : mean.sum / mean.count;
      return { tokens: Math.max(1, Math.round(estimate)) };
    },
    observe(query, outputTokens) {
      if (query.key !== undefined) add(byKey, query.key, outputTokens);
      add(byBucket, bucketOf(query), outputTokens);
    },
    repredict: (_query, generated, previous) => doubled(previous, generated),
  };
}
