import type { Command } from 'commander';
import type { SimReport } from '../sim/run.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface SimFlags {
  workload: string;
  instances: number;
  rps: string;
  requests: number;
  policy: string;
  model: string;
  seed: number;
  queuePolicy: string;
  chunk?: number;
  kvTokens?: number;
  sloTtft?: number;
  sloTpot?: number;
  out?: string;
  json?: boolean;
}

export function registerSim(program: Command): void {
  program
    .command('sim')
    .description('simulate a cluster of emulated engines under one or more global policies')
    .requiredOption(
      '--workload <w>',
      'a generator (toolbench, embodied-agent, programming, video-qa, loogle, mixed) or azure:FILE / mooncake:FILE',
    )
    .option('--instances <n>', 'model instances', positiveInt, 4)
    .option(
      '--rps <r>',
      'arrival rate in requests/s, or a comma list for a sweep (traces are re-timed to it)',
      '8',
    )
    .option('--requests <n>', 'requests per run', positiveInt, 2000)
    .option('--policy <list>', "global policy, a comma list, or 'all'", 'e2')
    .option('--model <preset>', 'cost-model preset', 'mistral-7b-a6000')
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option(
      '--queue-policy <name>',
      "engines' queue policy (fcfs, lpm, priority-groups, larry, no-preempt) or auto",
      'auto',
    )
    .option('--chunk <tokens>', 'chunked-prefill token budget per iteration', positiveInt)
    .option('--kv-tokens <n>', "override each instance's KV capacity in tokens", positiveInt)
    .option('--slo-ttft <s>', 'TTFT target in seconds (for SLO attainment)', positiveNumber)
    .option('--slo-tpot <s>', 'TPOT target in seconds (for SLO attainment)', positiveNumber)
    .option('--out <dir>', 'write JSON, per-request CSV and plots there')
    .option('--json', 'print one JSON object on stdout')
    .action((flags: SimFlags) => sim(flags));
}

function parseRates(list: string): number[] {
  const rates = list.split(',').map((s) => Number(s.trim()));
  for (const r of rates)
    if (!Number.isFinite(r) || r <= 0) throw new Error(`--rps: expected positive numbers, got '${list}'`);
  return rates;
}

async function sim(flags: SimFlags): Promise<void> {
  // Loaded here rather than above, so `preble --help` and a bad flag answer at once.
  const [{ costModelPreset }, { isQueuePolicyName }, { parsePolicyList }, { runSimulation }] =
    await Promise.all([
      import('../core/cost-model/presets.ts'),
      import('../core/local/factory.ts'),
      import('../core/policies/registry.ts'),
      import('../sim/run.ts'),
    ]);
  const [{ createProgress }, { writeSimOutputs }, { simTable }, { workloadStream }] = await Promise.all([
    import('./progress.ts'),
    import('./sim-output.ts'),
    import('./sim-table.ts'),
    import('./workload-stream.ts'),
  ]);
  const policies = parsePolicyList(flags.policy);
  const rates = parseRates(flags.rps);
  if (flags.queuePolicy !== 'auto' && !isQueuePolicyName(flags.queuePolicy)) {
    throw new Error(
      `unknown queue policy '${flags.queuePolicy}'; valid: auto, fcfs, lpm, priority-groups, larry, no-preempt`,
    );
  }
  if ((flags.sloTtft === undefined) !== (flags.sloTpot === undefined)) {
    throw new Error('--slo-ttft and --slo-tpot go together');
  }
  const costModel = costModelPreset(
    flags.model,
    flags.kvTokens === undefined ? {} : { kvCapacityTokens: flags.kvTokens },
  );
  const slo = flags.sloTtft === undefined ? undefined : { ttft: flags.sloTtft, tpot: flags.sloTpot! };
  const reports: SimReport[] = [];
  const records = new Map<string, import('../sim/record.ts').SimRecord[]>();
  const progress = createProgress(flags.requests * rates.length * policies.length);
  try {
    for (const rps of rates) {
      const requests = workloadStream(flags.workload, { requests: flags.requests, rps, seed: flags.seed });
      for (const policy of policies) {
        const done = progress.offset();
        const { report, result } = runSimulation({
          policy,
          workload: flags.workload,
          instances: flags.instances,
          rps,
          costModel,
          requests,
          seed: flags.seed,
          queuePolicy: flags.queuePolicy as SimReport['queuePolicy'] | 'auto',
          ...(flags.chunk === undefined ? {} : { chunkTokens: flags.chunk }),
          ...(slo === undefined ? {} : { slo }),
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
  if (flags.json) {
    const single = reports.length === 1 ? reports[0] : { results: reports };
    process.stdout.write(`${JSON.stringify(single)}\n`);
    return;
  }
  process.stdout.write(`${simTable(reports)}\n`);
}
