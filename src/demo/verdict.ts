/** What the verdict needs of one run of one policy (a DemoResult has these fields). */
export interface RunFigures {
  readonly policy: string;
  readonly latency: { readonly mean: number; readonly p99: number };
  readonly cacheHitRate: number;
  readonly perInstance: readonly { readonly requests: number }[];
}

/** One policy over its runs. */
export interface PolicySummary {
  readonly policy: string;
  /** Mean latency of each run, in run order. */
  readonly means: readonly number[];
  /** The median of the runs' mean latencies (the figure policies are ranked by). */
  readonly mean: number;
  readonly min: number;
  readonly max: number;
  /** Cached share of prompt tokens, averaged over runs. */
  readonly cachedShare: number;
  /** Busiest replica's requests over the mean per replica, averaged over runs (1 = even spread). */
  readonly loadSpread: number;
}

export interface Verdict {
  readonly summaries: readonly PolicySummary[];
  /** The policy with the lowest median mean latency. */
  readonly winner: string;
  /** Policies whose runs overlap the winner's (no clear difference at this number of runs). */
  readonly evenWith: readonly string[];
  /** Readable sentences: who won, by how much, why, and how much runs vary. */
  readonly lines: readonly string[];
}

/** Groups runs by policy (first-seen order) and ranks them; pure, so the wording is tested. */
export function demoVerdict(runs: readonly RunFigures[]): Verdict {
  const byPolicy = new Map<string, RunFigures[]>();
  for (const r of runs) {
    const list = byPolicy.get(r.policy) ?? [];
    list.push(r);
    byPolicy.set(r.policy, list);
  }
  if (byPolicy.size === 0) throw new Error('demo verdict: no runs');
  const summaries = [...byPolicy.entries()].map(([policy, list]) => summarize(policy, list));
  const ranked = [...summaries].sort((a, b) => a.mean - b.mean);
  const best = ranked[0]!;
  // Even: the ranges of the runs overlap, so another run could reverse the order.
  const evenWith = ranked.slice(1).filter((s) => s.min <= best.max);
  const lines: string[] = [];
  const runsEach = best.means.length;
  if (ranked.length === 1) {
    lines.push(`Only ${best.policy} ran: mean latency ${seconds(best.mean)}.`);
  } else if (evenWith.length > 0) {
    lines.push(
      `No clear winner: ${[best, ...evenWith].map((s) => `${s.policy} (${range(s)})`).join(', ')} overlap across runs.`,
    );
  } else {
    const second = ranked[1]!;
    lines.push(
      `${best.policy} wins: mean latency ${seconds(best.mean)}, ${ratio(second.mean / best.mean)} ahead of ` +
        `${second.policy} (${seconds(second.mean)})${
          ranked.length > 2
            ? ` and ${ratio(ranked[ranked.length - 1]!.mean / best.mean)} ahead of ${ranked[ranked.length - 1]!.policy} (${seconds(ranked[ranked.length - 1]!.mean)})`
            : ''
        }.`,
    );
  }
  lines.push(
    `Why: cached share of prompt tokens ${ranked.map((s) => `${s.policy} ${s.cachedShare.toFixed(2)}`).join(', ')}; ` +
      `load spread (busiest replica's requests over the mean) ${ranked.map((s) => `${s.policy} ${s.loadSpread.toFixed(2)}`).join(', ')}. ` +
      'More cached prompt means less prefill; a spread well above 1 means one replica queues while others idle.',
  );
  lines.push(
    runsEach > 1
      ? `Run to run (${runsEach} runs each, same requests, timing from the wall clock): ${ranked.map((s) => `${s.policy} ${range(s)}`).join(', ')}.`
      : 'One run each: near saturation the same requests can give a different mean latency on another run (--repeats 3 measures the spread).',
  );
  return { summaries, winner: best.policy, evenWith: evenWith.map((s) => s.policy), lines };
}

function summarize(policy: string, list: readonly RunFigures[]): PolicySummary {
  const means = list.map((r) => r.latency.mean);
  const sorted = [...means].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return {
    policy,
    means,
    mean: median,
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    cachedShare: average(list.map((r) => r.cacheHitRate)),
    loadSpread: average(list.map((r) => spread(r.perInstance.map((p) => p.requests)))),
  };
}

function spread(counts: readonly number[]): number {
  const total = counts.reduce((s, c) => s + c, 0);
  if (total === 0) return 1;
  return Math.max(...counts) / (total / counts.length);
}

function average(values: readonly number[]): number {
  return values.reduce((s, v) => s + v, 0) / values.length;
}

function seconds(s: number): string {
  return `${s.toFixed(2)} s`;
}

function ratio(x: number): string {
  return `${x.toFixed(1)}x`;
}

function range(s: PolicySummary): string {
  return s.means.length > 1 ? `${s.min.toFixed(2)}-${s.max.toFixed(2)} s` : seconds(s.mean);
}
