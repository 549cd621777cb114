import { costModelPreset } from '../src/core/cost-model/presets.ts';
import type { E2PlusInstanceCost } from '../src/core/policies/e2-plus/options.ts';
import { E2PlusPolicy } from '../src/core/policies/e2-plus/policy.ts';
import { parsePolicyOption } from '../src/core/policies/registry.ts';
import type { InstanceId, RouteDecision, RouteRequest } from '../src/core/types.ts';
import type { SimRecord } from '../src/sim/record.ts';
import { runSimulation } from '../src/sim/run.ts';
import { workloadStream } from '../src/workloads/request-stream.ts';

/**
 * The command line of the one-cell study scripts (queue-by-prompt.ts, sorting-probe.ts):
 * WORKLOAD RPS [--instances N] [--requests N] [--warmup SECONDS] [--seed S] [--options JSON], and
 * `flag` for a script's own flags.
 */
export interface CellArgs {
  readonly workload: string;
  readonly rps: number;
  readonly instances: number;
  readonly requests: number;
  readonly warmup: number;
  readonly seed: number;
  /** e2-plus options over its defaults. */
  readonly options: Record<string, unknown>;
  readonly flag: (name: string, fallback: string) => string;
}

export function cellArgs(script: string, args = process.argv.slice(2)): CellArgs {
  const flag = (name: string, fallback: string): string => {
    const i = args.indexOf(name);
    return i < 0 ? fallback : args[i + 1]!;
  };
  const [workload, rpsArg] = args;
  if (workload === undefined || rpsArg === undefined) throw new Error(`usage: ${script} WORKLOAD RPS [...]`);
  return {
    workload,
    rps: Number(rpsArg),
    instances: Number(flag('--instances', '4')),
    requests: Number(flag('--requests', '6000')),
    warmup: Number(flag('--warmup', '60')),
    seed: Number(flag('--seed', '0')),
    options: JSON.parse(flag('--options', '{}')) as Record<string, unknown>,
    flag,
  };
}

/**
 * A study script's policy spec: 'e2', or 'e2.decodeLoad=inflight+e2.windowSeconds=30' for a policy
 * with options (each part as `preble sim --policy-option` reads it).
 */
export function policySpec(spec: string): { policy: string; options?: Record<string, unknown> } {
  // Without options, runCell gives e2-plus the cell's --options.
  if (!spec.includes('=')) return { policy: spec };
  const options: Record<string, unknown> = {};
  let policy = '';
  for (const part of spec.split('+')) {
    const parsed = parsePolicyOption(part);
    policy = parsed.policy;
    options[parsed.key] = parsed.value;
  }
  return { policy, options };
}

/**
 * Watch every e2-plus decision without changing it (wraps its routing choice once per call): the
 * listener gets the request, the decision, the time, the instances it chose among and the policy.
 */
export function onE2PlusDecision(
  listener: (
    request: RouteRequest,
    decision: RouteDecision<E2PlusInstanceCost>,
    now: number,
    active: readonly InstanceId[],
    policy: E2PlusPolicy,
  ) => void,
): void {
  type Choose = (
    this: E2PlusPolicy,
    r: RouteRequest,
    now: number,
    active: readonly InstanceId[],
  ) => RouteDecision<E2PlusInstanceCost>;
  const proto = E2PlusPolicy.prototype as unknown as { choose: Choose };
  const choose = proto.choose;
  proto.choose = function (r, now, active) {
    const d = choose.call(this, r, now, active);
    listener(r, d, now, active, this);
    return d;
  };
}

/**
 * Whether `o` was routed after `r`. A run's records are in routing order, which tells apart the rows
 * of one arrival instant (a trace's rounded timestamps) where their arrival times cannot.
 */
export function routedAfter(records: readonly SimRecord[]): (o: SimRecord, r: SimRecord) => boolean {
  const order = new Map(records.map((r, k) => [r, k]));
  return (o, r) => order.get(o)! > order.get(r)!;
}

/** Prompt-length bins (tokens) the study scripts report by. */
export const PROMPT_BINS = [0, 500, 1000, 2000, 4000, 8000, Number.POSITIVE_INFINITY] as const;

export function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}

/** One policy on the cell (Mistral-7B on A6000), with `options`, else e2-plus with the cell's options. */
export function runCell(
  cell: CellArgs,
  policy: string,
  options?: Record<string, unknown>,
): ReturnType<typeof runSimulation> {
  const { workload, rps, instances, requests, seed } = cell;
  const policyOptions = options ?? (policy === 'e2-plus' ? cell.options : undefined);
  return runSimulation({
    policy,
    workload,
    instances,
    rps,
    costModel: costModelPreset('mistral-7b-a6000'),
    seed,
    requests: workloadStream(workload, { requests, rps, seed, instances }),
    warmupSeconds: cell.warmup,
    ...(policyOptions === undefined ? {} : { policyOptions }),
  });
}
