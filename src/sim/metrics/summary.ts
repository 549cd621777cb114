import { type Percentiles, percentiles } from '../../report/stats.ts';
import { isCompleted, type RequestRecord, tpotOf, ttftOf } from './record.ts';
import { type Slo, type SloAttainment, sloAttainment } from './slo.ts';

// The simulator imports both summaries from here.
export { type InstanceSummary, perInstance } from './per-instance.ts';

export interface SummaryOptions {
  /** Adds `sloAttainment`. */
  readonly slo?: Slo;
  /** Denominator of the throughput; default: from the first arrival to the last finish. */
  readonly durationSeconds?: number;
  /**
   * Warm-up: requests arriving before this time (seconds of the stream) are left out of the latency,
   * TTFT, TPOT and hit-rate figures (they meet cold caches and an empty window); throughput, SLO
   * attainment and `completed` still count every request. Default 0: nothing excluded.
   */
  readonly warmupSeconds?: number;
  /** Requests refused before they were placed (no record): each fails the SLO. Default 0. */
  readonly refused?: number;
}

/** The headline metrics of a run (times in seconds), over its completed requests. */
export interface Summary {
  readonly completed: number;
  /** finish - arrival. */
  readonly latency: Percentiles;
  /** firstToken - arrival. */
  readonly ttft: Percentiles;
  /** (finish - firstToken) / (outputTokens - 1), over requests with more than one output token. */
  readonly tpot: Percentiles;
  /** TTFT per prompt token (seconds / token): compares requests of very different lengths. */
  readonly normalizedTtft: Percentiles;
  /** Cached prompt tokens / all prompt tokens. */
  readonly cacheHitRate: number;
  /** Completed requests per second. */
  readonly throughputRps: number;
  /** Over all records and the refused requests, unfinished and refused ones failing; present when an SLO was given. */
  readonly sloAttainment?: SloAttainment;
  /** Completed requests left out of the figures as warm-up (present when `warmupSeconds` > 0). */
  readonly warmupExcluded?: number;
  /** finish - arrival over every completed request, the warm-up's included (with `warmupExcluded`). */
  readonly wholeRunLatency?: Percentiles;
}

export function summarize(records: readonly RequestRecord[], options: SummaryOptions = {}): Summary {
  const done = records.filter(isCompleted);
  const warmup = options.warmupSeconds ?? 0;
  if (!(warmup >= 0)) throw new Error(`warmupSeconds must be >= 0, got ${warmup}`);
  const latency: number[] = [];
  const wholeRun: number[] = [];
  const ttft: number[] = [];
  const tpot: number[] = [];
  const normalizedTtft: number[] = [];
  let prompt = 0;
  let cached = 0;
  let firstArrival = Number.POSITIVE_INFINITY;
  let lastFinish = Number.NEGATIVE_INFINITY;
  let excluded = 0;
  for (const record of done) {
    firstArrival = Math.min(firstArrival, record.arrival);
    lastFinish = Math.max(lastFinish, record.finish);
    wholeRun.push(record.finish - record.arrival);
    if (record.arrival < warmup) {
      excluded++;
      continue;
    }
    latency.push(record.finish - record.arrival);
    ttft.push(ttftOf(record));
    const perToken = tpotOf(record);
    if (perToken !== undefined) tpot.push(perToken);
    if (record.promptTokens > 0) normalizedTtft.push(ttftOf(record) / record.promptTokens);
    prompt += record.promptTokens;
    cached += record.cachedTokens;
  }
  const duration = options.durationSeconds ?? lastFinish - firstArrival;
  return {
    completed: done.length,
    latency: percentiles(latency),
    ttft: percentiles(ttft),
    tpot: percentiles(tpot),
    normalizedTtft: percentiles(normalizedTtft),
    cacheHitRate: prompt > 0 ? cached / prompt : 0,
    throughputRps: duration > 0 ? done.length / duration : 0,
    ...(options.slo === undefined
      ? {}
      : { sloAttainment: sloAttainment(records, options.slo, options.refused) }),
    ...(warmup > 0 ? { warmupExcluded: excluded, wholeRunLatency: percentiles(wholeRun) } : {}),
  };
}
