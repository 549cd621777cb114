/**
 * Where E2 places Programming's problems (docs/e2.md, "E2 against round robin, cell by cell"): runs one
 * simulation under e2 and reports, per problem (keyed by the first tokens after the demonstration),
 * the instance its first sample went to, when, how many instances had received any request by then,
 * and how many problems ran every sample on one instance.
 *
 *   node --import tsx scripts/e2-problem-placement.ts WORKLOAD INSTANCES RPS [E2_OPTIONS_JSON] [REQUESTS] [SEED]
 *   e.g. node --import tsx scripts/e2-problem-placement.ts programming:problems=160 8 24
 *
 * WORKLOAD must be a programming stream with the default 2,400-token demonstration.
 */
import { costModelPreset } from '../src/core/cost-model/presets.ts';
import { E2Policy } from '../src/core/policies/e2/policy.ts';
import type { InstanceId, RouteDecision, RouteRequest } from '../src/core/types.ts';
import { runSimulation } from '../src/sim/run.ts';
import { AUTHORS_DEMONSTRATION_TOKENS } from '../src/workloads/programming.ts';
import { createWorkload } from '../src/workloads/registry.ts';

const [
  workload = 'programming:problems=160',
  inst = '8',
  rpsArg = '24',
  opts = '{}',
  reqs = '1500',
  seedArg = '0',
] = process.argv.slice(2);
const instances = Number(inst);
const rps = Number(rpsArg);
const first = new Map<string, { instance: number; at: number; withLoad: number }>();
const samples = new Map<string, number[]>();

// Observe decisions without changing them: wrap the policy's routing choice.
type Choose = (request: RouteRequest, now: number, active: readonly InstanceId[]) => RouteDecision;
const proto = E2Policy.prototype as unknown as { choose: Choose };
const choose = proto.choose;
proto.choose = function (this: E2Policy, request, now, active) {
  const d = choose.call(this, request, now, active);
  const start = AUTHORS_DEMONSTRATION_TOKENS;
  const key = Array.from(request.tokens.slice(start, start + 10)).join(',');
  if (!first.has(key))
    first.set(key, {
      instance: d.instance,
      at: now,
      withLoad: active.filter((i) => this.loadOf(i) > 0).length,
    });
  const s = samples.get(key) ?? new Array<number>(instances).fill(0);
  s[d.instance]!++;
  samples.set(key, s);
  return d;
};

const { report } = runSimulation({
  policy: 'e2',
  workload,
  instances,
  rps,
  costModel: costModelPreset('mistral-7b-a6000'),
  seed: Number(seedArg),
  requests: () => createWorkload(workload, { requests: Number(reqs), rps, seed: Number(seedArg) }),
  policyOptions: JSON.parse(opts),
});
const perInstance = new Array<number>(instances).fill(0);
for (const f of first.values()) perInstance[f.instance]!++;
const times = [...first.values()].map((f) => f.at).sort((a, b) => a - b);
const quantile = (q: number) => times[Math.floor(q * (times.length - 1))]!.toFixed(1);
const withLoad = [...first.values()].reduce((s, f) => s + f.withLoad, 0) / first.size;
let onOne = 0;
for (const s of samples.values()) if (Math.max(...s) === s.reduce((a, b) => a + b, 0)) onOne++;
console.log(
  [
    `e2 ${report.latency.mean.toFixed(2)} / ${report.latency.p99.toFixed(1)} s, ${report.durationSeconds.toFixed(0)} s run`,
    `problems ${first.size}; first samples per instance [${perInstance.join(', ')}]`,
    `first sample at p50 ${quantile(0.5)} s, p90 ${quantile(0.9)} s; instances with any request then: ${withLoad.toFixed(1)} on average`,
    `problems whose samples all ran on one instance: ${onOne}`,
  ].join('\n'),
);
