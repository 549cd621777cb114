import type { BatchShape, CostModel } from '../../src/core/cost-model/types.ts';
import type { BatchItem, Engine } from '../../src/engine/engine.ts';
import type { EngineRequest, Iteration } from '../../src/engine/types.ts';

export { concat, seq } from '../helpers/simple-cost-model.ts';

export interface Coefficients {
  /** Seconds per iteration. */
  readonly a: number;
  /** Per new token. */
  readonly b: number;
  /** Per token of context (sum of seq). */
  readonly c: number;
  /** Per new x seq (attention). */
  readonly d: number;
}

/** A linear cost model (Preble/Vidur's form) that records every batch shape it is asked about. */
export interface RecordingCostModel extends CostModel {
  readonly shapes: BatchShape[];
}

export function linearCost(k: Coefficients, kvCapacityTokens = 1_000_000): RecordingCostModel {
  const shapes: BatchShape[] = [];
  return {
    name: 'test-linear',
    shapes,
    iterationTime(s: BatchShape): number {
      shapes.push({ ...s });
      return timeOf(k, s);
    },
    prefillTime: (n: number, cached: number) =>
      timeOf(k, { requests: 1, newTokens: n, seqTokens: n + cached, newTimesSeq: n * (n + cached) }),
    decodeTime: (n: number) => n * (k.a + k.b),
    kvBytesPerToken: 1,
    kvCapacityTokens,
  };
}

export function timeOf(k: Coefficients, s: BatchShape): number {
  return k.a + k.b * s.newTokens + k.c * s.seqTokens + k.d * s.newTimesSeq;
}

/** 1 s per iteration plus 1 ms per new token: durations easy to read. */
export const EASY: Coefficients = { a: 1, b: 0.001, c: 0, d: 0 };

export interface TimedRequest extends EngineRequest {
  readonly arrival: number;
}

export interface StepRecord {
  readonly start: number;
  readonly iteration: Iteration;
  readonly batch: BatchItem[];
}

export interface RunLog {
  readonly steps: StepRecord[];
  readonly firstToken: Map<string, number>;
  readonly finish: Map<string, number>;
  readonly end: number;
}

/**
 * Drive an engine on a virtual clock: requests are submitted at their arrival (or, if it falls inside
 * an iteration, at its end, with their own arrival time as enqueue time), iterations run back to back.
 */
export function drive(
  engine: Engine,
  requests: readonly TimedRequest[],
  onStep?: (record: StepRecord, engine: Engine) => void,
  maxSteps = 1_000_000,
): RunLog {
  const pending = [...requests].sort((x, y) => x.arrival - y.arrival);
  const steps: StepRecord[] = [];
  const firstToken = new Map<string, number>();
  const finish = new Map<string, number>();
  let next = 0;
  let now = 0;
  while (next < pending.length || engine.hasWork()) {
    if (!engine.hasWork() && next < pending.length) now = Math.max(now, pending[next]!.arrival);
    while (next < pending.length && pending[next]!.arrival <= now) {
      const r = pending[next++]!;
      engine.submit(
        {
          id: r.id,
          tokens: r.tokens,
          outputTokens: r.outputTokens,
          ...(r.maxTokens === undefined ? {} : { maxTokens: r.maxTokens }),
          ...(r.prediction === undefined ? {} : { prediction: r.prediction }),
        },
        r.arrival,
      );
    }
    const iteration = engine.step(now);
    const record = { start: now, iteration, batch: engine.lastBatch() };
    steps.push(record);
    now += iteration.duration;
    for (const id of iteration.events.firstTokens) firstToken.set(id, now);
    for (const f of iteration.events.finished) finish.set(f.id, now);
    onStep?.(record, engine);
    if (steps.length > maxSteps) throw new Error('drive: too many steps');
  }
  return { steps, firstToken, finish, end: now };
}
