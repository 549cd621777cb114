/**
 * What the advisor sees of the traffic: arrivals and finished requests per model over a sliding
 * window of the policy's clock. Pure bookkeeping (times are given), so tests drive it by hand.
 */
import type { FinishCounts } from '../../core/types.ts';

/** Summary of a set of lengths in tokens (zeros when empty). */
export interface LengthStats {
  readonly count: number;
  readonly mean: number;
  readonly sd: number;
  readonly min: number;
  readonly max: number;
}

/** One model's traffic in the window. */
export interface ObservedTraffic {
  readonly model: string;
  readonly arrivals: number;
  /** Arrivals per second of the policy's clock over the span observed. */
  readonly rate: number;
  readonly finished: number;
  /** Prompt, output and cached lengths of the finished requests, as the engines counted them. */
  readonly prompt: LengthStats;
  readonly output: LengthStats;
  /** Share of the finished requests' prompt tokens served from a cache. */
  readonly cachedShare: number;
}

export interface Observed {
  readonly at: number;
  /** Seconds the rates are over: the window, or less while the gateway is younger than it. */
  readonly spanSeconds: number;
  readonly models: readonly ObservedTraffic[];
}

interface Arrival {
  readonly at: number;
  readonly model: string;
}

interface Finish extends FinishCounts {
  readonly at: number;
  readonly model: string;
}

export function lengthStats(values: readonly number[]): LengthStats {
  if (values.length === 0) return { count: 0, mean: 0, sd: 0, min: 0, max: 0 };
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length;
  return {
    count: values.length,
    mean,
    sd: Math.sqrt(variance),
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

export class TrafficWindow {
  private arrivals: Arrival[] = [];
  private finishes: Finish[] = [];

  constructor(
    private readonly windowSeconds: number,
    /** When observation began (rates over a younger gateway use its age). */
    private readonly startedAt: number,
  ) {}

  arrived(model: string, at: number): void {
    this.arrivals.push({ at, model });
  }

  finished(model: string, counts: FinishCounts, at: number): void {
    this.finishes.push({ at, model, ...counts });
  }

  /** The window ending at `now` (older entries are dropped for good). */
  observe(now: number): Observed {
    const from = now - this.windowSeconds;
    this.arrivals = this.arrivals.filter((a) => a.at > from);
    this.finishes = this.finishes.filter((f) => f.at > from);
    const spanSeconds = Math.min(this.windowSeconds, Math.max(now - this.startedAt, 1e-9));
    const names = [...new Set([...this.arrivals, ...this.finishes].map((e) => e.model))].sort();
    const models = names.map((model): ObservedTraffic => {
      const arrivals = this.arrivals.filter((a) => a.model === model).length;
      const done = this.finishes.filter((f) => f.model === model);
      const promptTotal = done.reduce((s, f) => s + f.promptTokens, 0);
      const cachedTotal = done.reduce((s, f) => s + f.cachedTokens, 0);
      return {
        model,
        arrivals,
        rate: arrivals / spanSeconds,
        finished: done.length,
        prompt: lengthStats(done.map((f) => f.promptTokens)),
        output: lengthStats(done.map((f) => f.outputTokens)),
        cachedShare: promptTotal > 0 ? cachedTotal / promptTotal : 0,
      };
    });
    return { at: now, spanSeconds, models };
  }
}
