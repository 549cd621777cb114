/** The `preble sim` command that replays a recommended fleet: the same SimSpec as the planner ran. */
import type { Recommendation } from './evaluated.ts';
import { requestsAt, scenarioFleet } from './scenario.ts';
import type { ScenarioBase } from './space.ts';

/**
 * `preble sim` arguments for `recommendation` at `rps`, its fleet in `fleetFile` (what `--out` writes
 * as fleet.json). `--model` names the first instance's preset: the policy's own cost model, as
 * `scenarioSimSpec` gives it.
 */
export function replayArgs(
  base: ScenarioBase,
  recommendation: Recommendation,
  rps: number,
  fleetFile: string,
): string[] {
  const fleet = scenarioFleet({
    ...base,
    policy: recommendation.policy,
    fleet: { instances: recommendation.instances },
  });
  return [
    'sim',
    '--workload',
    base.workload,
    '--policy',
    recommendation.policy,
    '--fleet',
    fleetFile,
    '--model',
    fleet.instances[0]!.costModel,
    '--rps',
    String(rps),
    '--requests',
    String(requestsAt({ ...base, policy: recommendation.policy, fleet: { instances: [] } }, rps)),
    '--seed',
    String(base.seed),
    '--slo-ttft',
    String(base.slo.ttft),
    '--slo-tpot',
    String(base.slo.tpot),
  ];
}
