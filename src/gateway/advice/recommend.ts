/**
 * The recommendation's arithmetic, pure: the capacity tasks that measure one replica of the
 * gateway's cost model under the SLOs (the search's own scenarios and criteria), and replicas =
 * ceil(rate x headroom / capacity). A colocated fleet asks one question (mixed replicas); a
 * disaggregated one asks DistServe's two, as `preble plan --question distserve` does: a prefill
 * replica beside HELPERS decode replicas against the TTFT target, and a decode replica fed by
 * HELPERS prefill replicas against the TPOT target (its wait for a slot held to the TTFT target).
 */

import { type CapacityCriterion, DEFAULT_LOW_RPS, describeCriterion } from '../../search/capacity.ts';
import { HELPERS } from '../../search/distserve.ts';
import type { ScenarioSpec } from '../../search/scenario.ts';
import type { CapacityTask } from '../../search/task.ts';
import type { ReplicaRole } from '../config.ts';

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

/** The capacity tasks for a workload: one per role the fleet has. */
export function roleTasks(question: AdviceQuestion, workload: string): RoleTask[] {
  const scenario = (instances: ScenarioSpec['fleet']['instances'], policy: string): ScenarioSpec => ({
    workload,
    requests: question.requests,
    ...(question.minSeconds === undefined ? {} : { minSeconds: question.minSeconds }),
    seed: question.seed,
    slo: question.slo,
    policy,
    fleet: { instances },
  });
  const model = question.costModel;
  const task = (s: ScenarioSpec, criterion: CapacityCriterion): CapacityTask => ({
    scenario: s,
    criterion,
    low: DEFAULT_LOW_RPS,
  });
  if (!question.disaggregated) {
    const criterion: CapacityCriterion = { kind: 'slo', target: question.target };
    return [
      {
        role: 'mixed',
        task: task(scenario([{ model, role: 'mixed', count: 1 }], question.policy), criterion),
        how: `highest simulated rate of one ${model} replica (policy ${question.policy}) at which ${describeCriterion(criterion)}`,
      },
    ];
  }
  const prefill: CapacityCriterion = { kind: 'slo', target: question.target, metric: 'ttft' };
  const decode: CapacityCriterion = {
    kind: 'slo',
    target: question.target,
    metric: 'tpot',
    decodeWait: question.slo.ttft,
  };
  return [
    {
      role: 'prefill',
      task: task(
        scenario(
          [
            { model, role: 'prefill', count: 1 },
            { model, role: 'decode', count: HELPERS },
          ],
          question.policy,
        ),
        prefill,
      ),
      how: `highest simulated rate of one ${model} prefill replica beside ${HELPERS} decode replicas at which ${describeCriterion(prefill)}`,
    },
    {
      role: 'decode',
      task: task(
        scenario(
          [
            { model, role: 'prefill', count: HELPERS },
            { model, role: 'decode', count: 1 },
          ],
          question.policy,
        ),
        decode,
      ),
      how: `highest simulated rate of one ${model} decode replica fed by ${HELPERS} prefill replicas at which ${describeCriterion(decode)}, the wait for a decode slot under the TTFT target`,
    },
  ];
}

/** ceil(rate x headroom / capacity); 0 for no traffic; undefined when no rate passes (capacity 0). */
export function replicasFor(rate: number, headroom: number, capacity: number): number | undefined {
  if (rate <= 0) return 0;
  if (!(capacity > 0)) return undefined;
  return Math.ceil((rate * headroom) / capacity - 1e-9);
}
