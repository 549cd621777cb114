import { nonNegativeLeastSquares } from './least-squares.ts';
import {
  type LlamaCppCpuCoefficients,
  llamaCppCpuCostModel,
  llamaCppIterationTerms,
} from './llamacpp-small-cpu.ts';
import { type BatchShape, singleRequestBatch } from './types.ts';

/** A measured prefill of one request alone: prompt_ms for newTokens on top of cachedTokens. */
export interface PrefillPoint {
  readonly kind: 'prefill';
  readonly newTokens: number;
  readonly cachedTokens: number;
  /** Median ms over the samples. */
  readonly ms: number;
  readonly samples: readonly number[];
}

/** Measured decode steps of `requests` requests decoding together, each from `contextTokens`. */
export interface DecodePoint {
  readonly kind: 'decode';
  readonly requests: number;
  /** Prompt tokens of each request: its sequence length before the first decode step. */
  readonly contextTokens: number;
  /** Decode iterations behind the time (predicted_n - 1: the first token comes out of the prefill). */
  readonly steps: number;
  /** Median ms per step over the samples. */
  readonly ms: number;
  readonly samples: readonly number[];
}

export type CalibrationPoint = PrefillPoint | DecodePoint;

/** The iterations one point's time covers. */
function pointBatches(point: CalibrationPoint): BatchShape[] {
  if (point.kind === 'prefill') return [singleRequestBatch(point.newTokens, point.cachedTokens)];
  return Array.from({ length: point.steps }, (_, i) => {
    const seq = point.requests * (point.contextTokens + i + 1);
    return { requests: point.requests, newTokens: point.requests, seqTokens: seq, newTimesSeq: seq };
  });
}

/** Predicted ms: the prefill iteration, or the mean of the decode steps. */
export function predictPointMs(
  iterationTime: (batch: BatchShape) => number,
  point: CalibrationPoint,
): number {
  const batches = pointBatches(point);
  return (batches.reduce((sum, b) => sum + iterationTime(b), 0) / batches.length) * 1e3;
}

const NAMES = [
  'perIteration',
  'perNewToken',
  'perContextToken',
  'perTiledPair',
  'perRowPair',
  'perRequest',
] as const;

export interface ErrorSummary {
  /** Signed (predicted - measured) / measured, per point. */
  readonly relErrors: readonly number[];
  readonly maxRelError: number;
  readonly meanRelError: number;
}

/** Relative errors of a model over the points. */
export function relativeErrors(
  iterationTime: (batch: BatchShape) => number,
  points: readonly CalibrationPoint[],
): ErrorSummary {
  const relErrors = points.map((p) => (predictPointMs(iterationTime, p) - p.ms) / p.ms);
  const abs = relErrors.map(Math.abs);
  return {
    relErrors,
    maxRelError: Math.max(...abs),
    meanRelError: abs.reduce((sum, e) => sum + e, 0) / abs.length,
  };
}

export interface CalibrationFit {
  readonly coefficients: LlamaCppCpuCoefficients;
  /** llama.cpp's mechanism with these coefficients, as fitted (not monotone). */
  readonly mechanism: ErrorSummary;
  /** The cost model (monotone at the 64-row cliff). */
  readonly model: ErrorSummary;
}

/**
 * Coefficients (seconds) of llama.cpp's CPU iteration mechanism by non-negative least squares on relative
 * error: each point's row is divided by its measurement, so a 2 ms decode step weighs as much as a 4 s
 * prefill, and no coefficient can make time fall as work grows.
 */
export function fitLlamaCppCpu(points: readonly CalibrationPoint[]): CalibrationFit {
  const terms = (b: BatchShape): number[] => llamaCppIterationTerms(b);
  const rows = points.map((p) => {
    const batches = pointBatches(p);
    const sums = batches.map(terms).reduce((acc, t) => acc.map((v, i) => v + t[i]!));
    return sums.map((v) => v / batches.length / (p.ms * 1e-3));
  });
  const x = nonNegativeLeastSquares(
    rows,
    rows.map(() => 1),
  );
  const coefficients = Object.fromEntries(NAMES.map((name, i) => [name, x[i]!])) as Record<
    (typeof NAMES)[number],
    number
  >;
  const mechanism = (b: BatchShape) => terms(b).reduce((sum, v, i) => sum + v * x[i]!, 0);
  const model = llamaCppCpuCostModel('fit', coefficients, { kvBytesPerToken: 0, kvCapacityTokens: 0 });
  return {
    coefficients,
    mechanism: relativeErrors(mechanism, points),
    model: relativeErrors(model.iterationTime, points),
  };
}
