/**
 * Aladdin's performance models (seed 004, Aladdin §4, Eq. 1-4), fitted by least squares:
 *   KV use          kv  = h·(l_in + l_out) + j                 (Eq. 1)
 *   prefill batch   t_p = k1·Σl_in + c1                        (Eq. 2)
 *   decode step     t_d = (k2·l_ave + c2)·b + c3, b > 1        (Eq. 3)
 *   context limit   l_d <= (T_dec − c2·b − c3) / k2            (Eq. 4: the batch's total context under ATGT T_dec)
 * Pure: the samples come in, coefficients go out. `costModelFits` reads a first model off a cost model
 * (Aladdin profiles each worker configuration before serving); `FitWindow` refits from what finishes.
 */
import { leastSquares } from '../cost-model/least-squares.ts';
import type { CostModel } from '../cost-model/types.ts';

export interface KvFit {
  readonly h: number;
  readonly j: number;
}
export interface PrefillFit {
  readonly k1: number;
  readonly c1: number;
}
export interface DecodeFit {
  readonly k2: number;
  readonly c2: number;
  readonly c3: number;
}
export interface AladdinFits {
  readonly kv: KvFit;
  readonly prefill: PrefillFit;
  readonly decode: DecodeFit;
}

export interface KvSample {
  /** l_in + l_out of the requests measured (or their sum, with `requests` of them). */
  readonly tokens: number;
  readonly kv: number;
}
export interface PrefillSample {
  /** Σ l_in of the batch (uncached prompt tokens). */
  readonly inputTokens: number;
  readonly seconds: number;
}
export interface DecodeSample {
  /** Requests in the batch. */
  readonly batch: number;
  /** Their mean context (input plus tokens generated so far). */
  readonly meanContext: number;
  readonly seconds: number;
}

export function fitKv(samples: readonly KvSample[]): KvFit {
  const [h, j] = leastSquares(
    samples.map((s) => [s.tokens, 1]),
    samples.map((s) => s.kv),
  ) as [number, number];
  return { h, j };
}

export function fitPrefill(samples: readonly PrefillSample[]): PrefillFit {
  const [k1, c1] = leastSquares(
    samples.map((s) => [s.inputTokens, 1]),
    samples.map((s) => s.seconds),
  ) as [number, number];
  return { k1, c1 };
}

/** Eq. 3 is linear in (b·l_ave, b, 1): the batch's total context, its size and a constant. */
export function fitDecode(samples: readonly DecodeSample[]): DecodeFit {
  const [k2, c2, c3] = leastSquares(
    samples.map((s) => [s.batch * s.meanContext, s.batch, 1]),
    samples.map((s) => s.seconds),
  ) as [number, number, number];
  return { k2, c2, c3 };
}

export const kvOf = (fit: KvFit, tokens: number): number => fit.h * tokens + fit.j;
export const prefillSeconds = (fit: PrefillFit, inputTokens: number): number =>
  inputTokens <= 0 ? 0 : fit.k1 * inputTokens + fit.c1;
export const decodeStepSeconds = (fit: DecodeFit, batch: number, meanContext: number): number =>
  (fit.k2 * meanContext + fit.c2) * batch + fit.c3;

/** Eq. 4: the most total context a batch of `batch` requests may hold with its step within `atgt`. */
export function contextLimit(fit: DecodeFit, batch: number, atgt: number): number {
  if (fit.k2 <= 0) return Number.POSITIVE_INFINITY;
  return (atgt - fit.c2 * batch - fit.c3) / fit.k2;
}

/**
 * A first model read off a cost model, as Aladdin profiles a worker before it serves: prefills of 64 to
 * 4,096 tokens alone, decode steps of 2 to 128 requests at mean contexts of 128 to 4,096 tokens, and KV
 * in tokens (h = 1, j = 0: our engines count KV in tokens).
 */
export function costModelFits(costModel: CostModel): AladdinFits {
  const prefill: PrefillSample[] = [64, 256, 512, 1024, 2048, 4096].map((n) => ({
    inputTokens: n,
    seconds: costModel.prefillTime(n, 0),
  }));
  const decode: DecodeSample[] = [];
  for (const b of [2, 8, 32, 128])
    for (const l of [128, 512, 2048, 4096])
      decode.push({
        batch: b,
        meanContext: l,
        seconds: costModel.iterationTime({
          requests: b,
          newTokens: b,
          seqTokens: b * l,
          newTimesSeq: b * l,
        }),
      });
  return { kv: { h: 1, j: 0 }, prefill: fitPrefill(prefill), decode: fitDecode(decode) };
}

/**
 * The most recent samples of one kind, refit on demand: the model follows the worker as it drifts
 * (Aladdin refits continuously). Until `minSamples` arrive the prior stands; a fit whose slope is not
 * positive (too few distinct points, noise) keeps the previous one.
 */
export class FitWindow<S, F> {
  private readonly samples: S[] = [];
  private fitted: F;
  private dirty = false;

  constructor(
    prior: F,
    private readonly fit: (samples: readonly S[]) => F,
    private readonly plausible: (fit: F) => boolean,
    private readonly capacity = 512,
    private readonly minSamples = 16,
  ) {
    this.fitted = prior;
  }

  add(sample: S): void {
    this.samples.push(sample);
    if (this.samples.length > this.capacity) this.samples.shift();
    this.dirty = true;
  }

  get size(): number {
    return this.samples.length;
  }

  current(): F {
    if (this.dirty && this.samples.length >= this.minSamples) {
      this.dirty = false;
      try {
        const next = this.fit(this.samples);
        if (this.plausible(next)) this.fitted = next;
      } catch {
        // Linearly dependent samples (every batch alike): keep the previous fit.
      }
    }
    return this.fitted;
  }
}
