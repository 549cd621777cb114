/**
 * The recommendation's arithmetic, pure: the capacity tasks that measure one replica of the
 * gateway's cost model under the SLOs (the search's own scenarios and criteria), and replicas =
 * ceil(rate x headroom / capacity). A colocated fleet asks one question (mixed replicas); a
 * disaggregated one asks DistServe's two, as `preble plan --question distserve` does, in turn: a
 * prefill replica beside HELPERS decode replicas against the TTFT target (`roleTasks`), then a decode
 * replica fed by as many prefill replicas as the rate needs against the TPOT target, its wait for a
 * slot held to the TTFT target and its search stopped at what its feeders sustain (`decodeTask`).
 */

import {
  type CapacityCriterion,
  DEFAULT_LOW_RPS,
  describeCriterion,
  searchUpTo,
} from '../../search/capacity.ts';
import { decodeFeeders, HELPERS } from '../../search/distserve.ts';
import type { ScenarioSpec } from '../../search/scenario.ts';
import type { CapacityTask } from '../../search/task.ts';
import type { ReplicaRole } from '../config.ts';
import { twoDigits } from './workload.ts';

export interface AdviceQuestion {
  /** Cost-model preset of the replicas (the gateway's `costModel`). */
  readonly costModel: string;
  /** The global policy the fleet runs (its scenario runs it too). */
  readonly policy: string;
  readonly disaggregated: boolean;
  readonly slo: { readonly ttft: number; readonly tpot: number };
  readonly target: number;
  readonly seed: number;
  /** Requests per simulated run, at least; and the seconds of arrivals each run carries (scenario.ts). */
  readonly requests: number;
  readonly minSeconds?: number;
}

export interface RoleTask {
  readonly role: ReplicaRole;
  readonly task: CapacityTask;
  /** How the capacity is measured, in words (for GET /admin/advice). */
  readonly how: string;
}

/** The roles the question sizes: mixed for a colocated fleet, prefill and decode for a disaggregated one. */
export function questionRoles(question: Pick<AdviceQuestion, 'disaggregated'>): ReplicaRole[] {
  return question.disaggregated ? ['prefill', 'decode'] : ['mixed'];
}

/** The search's scenario of the workload on `instances`, under the question's policy and SLOs. */
function scenarioOf(
  question: AdviceQuestion,
  workload: string,
  instances: ScenarioSpec['fleet']['instances'],
): ScenarioSpec {
  return {
    workload,
    requests: question.requests,
    ...(question.minSeconds === undefined ? {} : { minSeconds: question.minSeconds }),
    seed: question.seed,
    slo: question.slo,
    policy: question.policy,
    fleet: { instances },
  };
}

/**
 * The capacity tasks asked first: one mixed replica for a colocated fleet; for a disaggregated one the
 * prefill replica, whose capacity sizes the decode question's feeders (`decodeTask`).
 */
export function roleTasks(question: AdviceQuestion, workload: string): RoleTask[] {
  const model = question.costModel;
  if (!question.disaggregated) {
    const criterion: CapacityCriterion = { kind: 'slo', target: question.target };
    return [
      {
        role: 'mixed',
        task: {
          scenario: scenarioOf(question, workload, [{ model, role: 'mixed', count: 1 }]),
          criterion,
          low: DEFAULT_LOW_RPS,
        },
        how: `highest simulated rate of one ${model} replica (policy ${question.policy}) at which ${describeCriterion(criterion)}`,
      },
    ];
  }
  const prefill: CapacityCriterion = { kind: 'slo', target: question.target, metric: 'ttft' };
  return [
    {
      role: 'prefill',
      task: {
        scenario: scenarioOf(question, workload, [
          { model, role: 'prefill', count: 1 },
          { model, role: 'decode', count: HELPERS },
        ]),
        criterion: prefill,
        low: DEFAULT_LOW_RPS,
      },
      how: `highest simulated rate of one ${model} prefill replica beside ${HELPERS} decode replicas at which ${describeCriterion(prefill)}`,
    },
  ];
}

/**
 * Prefill replicas that feed the measured decode replica: the planner's n (src/search/distserve.ts),
 * max(HELPERS, ceil(rate x headroom / prefill capacity)), at most MAX_HELPERS; undefined when no
 * prefill rate passed (nothing can feed a decode replica).
 */
export function feedersFor(rate: number, headroom: number, prefillCapacity: number): number | undefined {
  if (!(prefillCapacity > 0)) return undefined;
  return decodeFeeders(Math.max(0, rate) * headroom, prefillCapacity);
}

/**
 * The decode question: one decode replica fed by `feeders` prefill replicas, its search stopping at
 * what they sustain (`searchUpTo`), since past it requests reach the decode replica no faster and
 * every rate would pass.
 */
export function decodeTask(
  question: AdviceQuestion,
  workload: string,
  feeders: number,
  prefillCapacity: number,
): RoleTask {
  const model = question.costModel;
  const decode: CapacityCriterion = {
    kind: 'slo',
    target: question.target,
    metric: 'tpot',
    decodeWait: question.slo.ttft,
  };
  const cap = feeders * prefillCapacity;
  return {
    role: 'decode',
    task: {
      scenario: scenarioOf(question, workload, [
        { model, role: 'prefill', count: feeders },
        { model, role: 'decode', count: 1 },
      ]),
      criterion: decode,
      ...searchUpTo(cap, DEFAULT_LOW_RPS),
    },
    how: `highest simulated rate of one ${model} decode replica fed by ${feeders} prefill replicas (max(${HELPERS}, ceil(rate x headroom / prefill capacity))) at which ${describeCriterion(decode)}, the wait for a decode slot under the TTFT target, searched up to what they sustain (${twoDigits(cap)} req/s)`,
  };
}

/** ceil(rate x headroom / capacity); 0 for no traffic; undefined when no rate passes (capacity 0). */
export function replicasFor(rate: number, headroom: number, capacity: number): number | undefined {
  if (rate <= 0) return 0;
  if (!(capacity > 0)) return undefined;
  return Math.ceil((rate * headroom) / capacity - 1e-9);
}
