import { withDefaults } from '../with-defaults.ts';
import { admitInOrder, noReserve } from './admission.ts';
import { admitsDecode, type DecodeAdmission, type ReserveFrom } from './tetri-decode-admission.ts';
import { PrefillBatchScheduler, type PrefillOrder } from './tetri-prefill-batch.ts';
import type { QueuePolicy } from './types.ts';

export interface TetriInferQueueOptions {
  /** Prefill order within a PrefillSchedBatch (§3.3.1). Default sjf, the paper's. */
  readonly prefillOrder?: PrefillOrder;
  /** PrefillSchedBatch: raw requests sorted at a time. Default 16, the paper's. */
  readonly prefillSchedBatch?: number;
  /** Decode admission (§3.4). Default reserve-dynamic, the paper's. */
  readonly decodeAdmission?: DecodeAdmission;
  /** A bucketed prediction counts from its lower end (the paper's) or its point estimate. Default lower. */
  readonly reserveFrom?: ReserveFrom;
}

export const tetriInferQueueDefaults: Required<TetriInferQueueOptions> = {
  prefillOrder: 'sjf',
  prefillSchedBatch: 16,
  decodeAdmission: 'reserve-dynamic',
  reserveFrom: 'lower',
};

/**
 * TetriInfer's instance-local scheduling (seed 004; the `tetriinfer` global policy's engines): on a
 * prefill instance, the prefill scheduler (`tetri-prefill-batch.ts`) orders admissions, which the
 * engine's chunk budget then slices and merges into fixed-size chunks; on a decode instance, arrived
 * requests are admitted by `decodeAdmission` (`tetri-decode-admission.ts`, the engine's adopt queue).
 * Running requests are preempted on memory pressure as under fcfs (swapped on a decode instance).
 */
export function createTetriInferQueuePolicy(options: TetriInferQueueOptions = {}): QueuePolicy {
  const o = withDefaults(tetriInferQueueDefaults, options);
  if (!['fcfs', 'sjf', 'ljf'].includes(o.prefillOrder))
    throw new Error(`tetriinfer queue: prefillOrder must be fcfs, sjf or ljf, got '${o.prefillOrder}'`);
  if (!Number.isInteger(o.prefillSchedBatch) || o.prefillSchedBatch < 1)
    throw new Error(
      `tetriinfer queue: prefillSchedBatch must be an integer >= 1, got ${o.prefillSchedBatch}`,
    );
  if (!['greedy', 'reserve-static', 'reserve-dynamic'].includes(o.decodeAdmission))
    throw new Error(
      `tetriinfer queue: decodeAdmission must be greedy, reserve-static or reserve-dynamic, got '${o.decodeAdmission}'`,
    );
  if (!['lower', 'point'].includes(o.reserveFrom))
    throw new Error(`tetriinfer queue: reserveFrom must be lower or point, got '${o.reserveFrom}'`);
  const scheduler = new PrefillBatchScheduler(o.prefillOrder, o.prefillSchedBatch);
  return {
    name: 'tetriinfer',
    preempts: true,
    reserveTokens: noReserve,
    select: (waiting, ctx) => admitInOrder(waiting, ctx, scheduler.nextIndex(waiting), noReserve),
    admitAdopted: (candidate, running, ctx) =>
      admitsDecode(o.decodeAdmission, candidate, running, ctx.freeKvTokens, o.reserveFrom),
  };
}
