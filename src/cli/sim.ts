import type { Command } from 'commander';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { createLengthPredictor } from '../core/length/registry.ts';
import { groupPolicyOptions, parsePolicyList } from '../core/policies/registry.ts';
import {
  isQueuePolicyName,
  parseQueuePolicyOption,
  type QueuePolicyOptions,
  queuePolicyNames,
} from '../core/replica-queue/registry.ts';
import type { SimReport, SimSpec } from '../sim/run.ts';
import type { WorkloadRequest } from '../workloads/types.ts';
import { ensureWritableDir } from './out-dir.ts';
import { collect, nonNegativeInt, nonNegativeNumber, positiveInt, positiveNumber } from './parse.ts';
import { addRegistryHelp } from './registry-help.ts';

interface SimFlags {
  workload: string;
  instances: number;
  rps?: string;
  requests: number;
  policy: string;
  policyOption: string[];
  model: string;
  seed: number;
  queuePolicy: string;
  queuePolicyOption: string[];
  chunk?: number;
  kvTokens?: number;
  hostKvTokens?: number;
  fleet?: string;
  fleetAction: string[];
  provisioner?: string;
  startupSeconds: number;
  sloTtft?: number;
  sloTpot?: number;
  goodput?: number;
  warmup?: number;
  predictor?: string;
  out?: string;
  json?: boolean;
  baseline?: string;
  floor?: boolean;
}

export function registerSim(program: Command): void {
  const command = program
    .command('sim')
    .description('simulate a cluster of emulated engines under one or more global policies')
    .requiredOption(
      '--workload <w>',
      'a generator or azure:FILE / mooncake:FILE / bailian:FILE (listed below)',
    )
    .option('--instances <n>', 'model instances', positiveInt, 4)
    .option(
      '--fleet <fleet>',
      'instances one by one instead of --instances: a YAML/JSON file of instance specs, or counts like 4M or 2P1D (docs/fleets.md); prefill/decode instances need a disaggregated policy (distserve)',
    )
    .option(
      '--rps <r>',
      `arrival rate in requests/s, or a comma list for a sweep (generators: default ${DEFAULT_RPS}; traces: re-timed to it, else replayed at their own timing)`,
    )
    .option(
      '--fleet-action <action>',
      'a fleet change at run time: at=SECONDS with add=COUNTS (1P, 2D: --fleet shorthand), drain=ID, remove=ID or role=ID:ROLE, e.g. at=60,add=1P (repeatable; docs/fleets.md)',
      collect,
      [],
    )
    .option(
      '--provisioner <name[:opts]>',
      'size the fleet at run time (listed below), e.g. aladdin or aladdin:heartbeatSeconds=5,role=decode (docs/provisioning.md)',
    )
    .option(
      '--startup-seconds <s>',
      "with --provisioner: seconds from a worker's add to its readiness (paid for from the add)",
      nonNegativeNumber,
      30,
    )
    .option('--requests <n>', 'requests per run', positiveInt, 2000)
    .option('--policy <list>', "global policy, a comma list, or 'all' (listed below)", 'e2')
    .option(
      '--policy-option <POLICY.OPTION=VALUE>',
      'a policy option over its default, e.g. e2.phaseMix=false (repeatable; options listed below)',
      collect,
      [],
    )
    .option('--model <preset>', 'cost-model preset (listed below)', 'mistral-7b-a6000')
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--queue-policy <name>', "engines' queue policy (listed below), or auto: lpm", 'auto')
    .option(
      '--queue-policy-option <QUEUE.OPTION=VALUE>',
      "an engine queue policy's option over its default and the global policy's, e.g. lpm.fcfsAbove=Infinity (repeatable; options listed below; engines running another queue policy ignore it)",
      collect,
      [],
    )
    .option('--chunk <tokens>', 'chunked-prefill token budget per iteration', positiveInt)
    .option('--kv-tokens <n>', "override each instance's KV capacity in tokens", positiveInt)
    .option(
      '--host-kv-tokens <n>',
      'a host KV pool per instance, in tokens: preempted decodes swap to it over PCIe instead of being recomputed (fastserve)',
      positiveInt,
    )
    .option('--slo-ttft <s>', 'TTFT target in seconds (for SLO attainment)', positiveNumber)
    .option('--slo-tpot <s>', 'TPOT target in seconds (for SLO attainment)', positiveNumber)
    .option(
      '--goodput <share>',
      'instead of runs at --rps: per policy, the highest rate at which this share of requests meets both SLOs (e.g. 0.9), searched up from --rps (a trace without it: from its own mean rate)',
      share,
    )
    .option(
      '--warmup <s>',
      'leave requests arriving in the first S seconds out of latency, TTFT, TPOT and hit rate (cold caches)',
      nonNegativeNumber,
    )
    .option(
      '--predictor <spec>',
      "predict each request's output length at arrival for the queue policies (listed below)",
    )
    .option(
      '--baseline <policy>',
      'compare this policy of --policy with each other one at each rate: paired mean and p99 latency ratios with 95% bootstrap intervals over the requests both completed',
    )
    .option('--out <dir>', 'write JSON, per-request CSV and plots there')
    .option(
      '--floor',
      "also each run's latency floor: every measured request alone on an idle instance with every earlier prompt cached (no policy goes below it; --json: {results, floors})",
    )
    .option('--json', 'print one JSON object on stdout')
    .action((flags: SimFlags) => sim(flags));
  addRegistryHelp(command, [
    'policies',
    'provisioners',
    'queuePolicies',
    'presets',
    'workloads',
    'predictors',
  ]);
}

function share(value: string): number {
  const n = Number(value);
  if (!(n > 0 && n <= 1)) throw new Error(`--goodput: expected a share in (0, 1], got '${value}'`);
  return n;
}

/** `--policy-option` values grouped by policy; each must name a policy of the run. */
function policyOptionsOf(
  given: readonly string[],
  policies: readonly string[],
): Map<string, Record<string, unknown>> {
  return groupPolicyOptions(given, (text, policy) => {
    if (!policies.includes(policy))
      throw new Error(`--policy-option ${text}: '${policy}' is not in --policy`);
  });
}

/** `--queue-policy-option` values in one object; each must name the run's queue policy unless it is auto. */
function queuePolicyOptionsOf(given: readonly string[], queuePolicy: string): QueuePolicyOptions | undefined {
  if (given.length === 0) return undefined;
  const options: Record<string, unknown> = {};
  for (const text of given) {
    const parsed = parseQueuePolicyOption(text);
    if (queuePolicy !== 'auto' && parsed.queuePolicy !== queuePolicy)
      throw new Error(`--queue-policy-option ${text}: the run's queue policy is '${queuePolicy}'`);
    options[parsed.key] = parsed.value;
  }
  return options as QueuePolicyOptions;
}

/** `--rps` when none is given and the workload is a generator. */
const DEFAULT_RPS = 8;

function parseRates(list: string): number[] {
  const rates = list.split(',').map((s) => Number(s.trim()));
  for (const r of rates)
    if (!Number.isFinite(r) || r <= 0) throw new Error(`--rps: expected positive numbers, got '${list}'`);
  return rates;
}

async function sim(flags: SimFlags): Promise<void> {
  // The simulator, plots and progress bars load here rather than above, so `--help` answers at once.
  const [
    { fleetRun, runSimulation },
    { createProgress },
    { writeSimOutputs },
    { simTable },
    { traceWindow, workloadStream },
  ] = await Promise.all([
    import('../sim/run.ts'),
    import('./progress.ts'),
    import('./sim-output.ts'),
    import('./sim-table.ts'),
    import('../workloads/request-stream.ts'),
  ]);
  const policies = parsePolicyList(flags.policy);
  // A trace without --rps keeps its own timing (its mean rate labels the run); anything else runs at a rate.
  const trace = traceWindow(flags.workload, flags.requests);
  const ownRate = flags.rps === undefined ? trace?.rate : undefined;
  const rates =
    ownRate !== undefined ? [ownRate] : flags.rps === undefined ? [DEFAULT_RPS] : parseRates(flags.rps);
  const policyOptions = policyOptionsOf(flags.policyOption, policies);
  if (flags.baseline !== undefined) {
    if (!(policies as readonly string[]).includes(flags.baseline))
      throw new Error(`--baseline ${flags.baseline}: not in --policy (${policies.join(', ')})`);
    if (new Set(policies).size < 2) throw new Error('--baseline needs at least one other policy in --policy');
    if (flags.goodput !== undefined)
      throw new Error('--baseline compares runs at --rps, not a --goodput search');
  }
  if (flags.out !== undefined && flags.goodput === undefined) await ensureWritableDir(flags.out, '--out');
  if (flags.queuePolicy !== 'auto' && !isQueuePolicyName(flags.queuePolicy)) {
    throw new Error(
      `unknown queue policy '${flags.queuePolicy}'; valid: auto, ${queuePolicyNames.join(', ')}`,
    );
  }
  // A fleet file's instances may name their own queue policy: then any queue policy's options may apply.
  const runQueuePolicy = flags.fleet === undefined ? flags.queuePolicy : 'auto';
  const queuePolicyOptions = queuePolicyOptionsOf(flags.queuePolicyOption, runQueuePolicy);
  // A bad spec or option value fails here, in one line, before any run.
  if (flags.predictor !== undefined) createLengthPredictor(flags.predictor, { seed: flags.seed });
  if ((flags.sloTtft === undefined) !== (flags.sloTpot === undefined)) {
    throw new Error('--slo-ttft and --slo-tpot go together');
  }
  const costModel = costModelPreset(
    flags.model,
    flags.kvTokens === undefined ? {} : { kvCapacityTokens: flags.kvTokens },
  );
  const slo = flags.sloTtft === undefined ? undefined : { ttft: flags.sloTtft, tpot: flags.sloTpot! };
  const fleet =
    flags.fleet === undefined
      ? undefined
      : (await import('./fleet-file.ts')).fleetFromFlag(flags.fleet, flags.model);
  const fleetActions =
    flags.fleetAction.length === 0
      ? undefined
      : await import('./fleet-action.ts').then(({ parseFleetAction }) =>
          flags.fleetAction.flatMap((value) => parseFleetAction(value, flags.model)),
        );
  const provisioner =
    flags.provisioner === undefined
      ? undefined
      : {
          choice: (await import('../core/provisioning/registry.ts')).parseProvisioner(flags.provisioner),
          startupSeconds: flags.startupSeconds,
        };
  // The workload's working set scales with the cluster (docs/design.md, "Workloads").
  const instances = fleet === undefined ? flags.instances : fleet.instances.length;
  const specFor = (policy: string, rps: number, requests: () => Iterable<WorkloadRequest>): SimSpec => {
    const options = policyOptions.get(policy);
    return {
      policy,
      ...(options === undefined ? {} : { policyOptions: options }),
      workload: flags.workload,
      instances: flags.instances,
      ...(fleet === undefined ? {} : fleetRun(fleet, flags.kvTokens)),
      ...(fleetActions === undefined ? {} : { fleetActions }),
      ...(provisioner === undefined ? {} : { provisioner }),
      rps,
      costModel,
      requests,
      seed: flags.seed,
      queuePolicy: flags.queuePolicy as SimReport['queuePolicy'] | 'auto',
      ...(queuePolicyOptions === undefined ? {} : { queuePolicyOptions }),
      ...(flags.chunk === undefined ? {} : { chunkTokens: flags.chunk }),
      ...(flags.hostKvTokens === undefined ? {} : { hostKvTokens: flags.hostKvTokens }),
      ...(slo === undefined ? {} : { slo }),
      ...(flags.warmup === undefined ? {} : { warmupSeconds: flags.warmup }),
      ...(flags.predictor === undefined ? {} : { predictor: flags.predictor }),
    };
  };
  if (flags.goodput !== undefined) {
    if (slo === undefined) throw new Error('--goodput needs --slo-ttft and --slo-tpot');
    if (rates.length !== 1) throw new Error('--goodput takes one --rps: the rate its search starts from');
    if (flags.out !== undefined) throw new Error('--goodput writes no --out files; run the rates it finds');
    if (flags.floor === true) throw new Error('--floor reads runs at --rps, not a --goodput search');
    const stream = (rps: number) =>
      workloadStream(flags.workload, { requests: flags.requests, rps, seed: flags.seed, instances });
    const { goodputTable, searchGoodput } = await import('./sim-goodput.ts');
    const results = policies.map((policy) =>
      searchGoodput((rps) => specFor(policy, rps, stream(rps)), { low: rates[0]!, target: flags.goodput! }),
    );
    process.stdout.write(flags.json ? `${JSON.stringify({ results })}\n` : `${goodputTable(results)}\n`);
    return;
  }
  const reports: SimReport[] = [];
  const records = new Map<string, import('../sim/record.ts').SimRecord[]>();
  const streams = new Map<number, () => Iterable<WorkloadRequest>>();
  const progress = createProgress((trace?.rows ?? flags.requests) * rates.length * policies.length);
  try {
    for (const rps of rates) {
      const requests = workloadStream(flags.workload, {
        requests: flags.requests,
        ...(ownRate === undefined ? { rps } : {}),
        seed: flags.seed,
        instances,
      });
      streams.set(rps, requests);
      for (const policy of policies) {
        const done = progress.offset();
        const { report, result } = runSimulation({
          ...specFor(policy, rps, requests),
          onProgress: (finished) => progress.update(done + finished),
        });
        progress.update(done + report.requests);
        reports.push(report);
        records.set(`${policy}@${rps}`, result.records);
      }
    }
  } finally {
    progress.stop();
  }
  if (flags.out !== undefined) await writeSimOutputs(flags.out, reports, records);
  const comparisons =
    flags.baseline === undefined
      ? undefined
      : await import('./sim-compare.ts').then(({ compareWithBaseline }) =>
          compareWithBaseline(flags.baseline!, reports, records, flags.warmup ?? 0),
        );
  const floors =
    flags.floor === true
      ? (await import('./sim-floor.ts')).floorRows(reports, (r) =>
          specFor(r.policy, r.rps, streams.get(r.rps)!),
        )
      : undefined;
  if (flags.json) {
    const single =
      comparisons !== undefined || floors !== undefined
        ? {
            results: reports,
            ...(comparisons === undefined ? {} : { comparisons }),
            ...(floors === undefined ? {} : { floors }),
          }
        : reports.length === 1
          ? reports[0]
          : { results: reports };
    process.stdout.write(`${JSON.stringify(single)}\n`);
    return;
  }
  process.stdout.write(`${simTable(reports)}\n`);
  if (comparisons !== undefined && comparisons.length > 0) {
    const { baselineTable } = await import('./sim-compare.ts');
    process.stdout.write(`\n${baselineTable(comparisons)}\n`);
  }
  if (floors !== undefined) {
    const { floorTable } = await import('./sim-floor.ts');
    process.stdout.write(`\n${floorTable(floors)}\n`);
  }
}
