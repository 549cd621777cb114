import { writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { groupPolicyOptions } from '../core/policies/registry.ts';
import { buildEachOnce, withPolicyOptions } from '../experiments/policy-options.ts';
import { experiments, findExperiment } from '../experiments/registry.ts';
import { ensureWritableDir } from './out-dir.ts';
import { collect, nonNegativeInt, positiveInt } from './parse.ts';

interface ExperimentFlags {
  requests?: number;
  seed: number;
  repeats?: number;
  only?: string;
  out?: string;
  azure?: string;
  azureCode?: string;
  azureConv?: string;
  mooncake?: string;
  bailian?: string;
  fleet?: string;
  policyOption: string[];
  json?: boolean;
}

export function registerExperiment(program: Command): void {
  program
    .command('experiment')
    .description(
      `run a paper experiment in the simulator and write a Markdown report (${experiments.map((e) => e.name).join(', ')})`,
    )
    .argument('<name>', 'experiment name')
    .option(
      '--requests <n>',
      `requests per simulation (default: the size of the committed report: ${experiments.map((e) => `${e.name} ${e.defaultRequests}`).join(', ')})`,
      positiveInt,
    )
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option(
      '--repeats <n>',
      `runs of each cell on seeds SEED, SEED+1, ..., pooled in the verdicts (${experiments
        .filter((e) => e.defaultRepeats !== undefined)
        .map((e) => `${e.name} only; default ${e.defaultRepeats}`)
        .join(', ')})`,
      positiveInt,
    )
    .option('--only <list>', 'comma list of series (policies or ablation steps) to run')
    .option('--out <dir>', 'report folder (default docs/results/<name>)')
    .option('--azure <file>', "Azure LLM trace CSV for azure-mixed and the policies grid's mixed@azure")
    .option(
      '--azure-code <file>',
      'Azure 2023 coding trace CSV for splitwise (default: ../shared/data/azure-llm-2023/ where it exists, else the stand-in; "stand-in" forces it) and the policies grid\'s azure-code panel (left out where missing)',
    )
    .option(
      '--azure-conv <file>',
      'Azure 2023 conversation trace CSV for splitwise (default: ../shared/data/azure-llm-2023/ where it exists, else the stand-in; "stand-in" forces it) and the policies grid\'s azure-conv panel (left out where missing)',
    )
    .option(
      '--mooncake <file>',
      "a Mooncake-format JSONL trace (arrivals, lengths, 512-token block hashes) for the policies grid's mooncake panel (left out without one)",
    )
    .option(
      '--bailian <file>',
      "a Qwen-Bailian JSONL trace (timestamps in seconds, 16-token block hashes) for the policies grid's bailian panel (left out without one)",
    )
    .option(
      '--fleet <file>',
      'the policies grid on this fleet (a YAML/JSON file of instance specs, each with its own preset; docs/fleets.md) in place of its 4 and 8 Mistral-7B A6000s',
    )
    .option(
      '--policy-option <POLICY.OPTION=VALUE>',
      "a global policy's option over its default (and over a cell's own, e.g. an ablation step's) in every simulation that runs the policy, e.g. e2-plus.latencyPower=1 (repeatable; the options: preble sim --help)",
      collect,
      [],
    )
    .option(
      '--json',
      'also print the claims record on stdout: {"experiment", "claims": [{"id", "source", "statement", "paper", "measured", "holds"}]}',
    )
    .action((name: string, flags: ExperimentFlags) => runExperiment(name, flags));
}

async function runExperiment(name: string, flags: ExperimentFlags): Promise<void> {
  const experiment = findExperiment(name);
  // Loaded here rather than above (plots load vega), so `preble --help` and a bad flag answer at once.
  const [{ renderReport }, { runCells }, { writePlot }] = await Promise.all([
    import('../experiments/report.ts'),
    import('../experiments/runner.ts'),
    import('./plot-files.ts'),
  ]);
  const requests = flags.requests ?? experiment.defaultRequests;
  if (flags.fleet !== undefined && name !== 'policies')
    throw new Error(`--fleet: experiment '${name}' runs its own fleets (only policies takes one)`);
  const fleet =
    flags.fleet === undefined
      ? undefined
      : {
          label: basename(flags.fleet).replace(/\.(ya?ml|json)$/i, ''),
          fleet: (await import('./fleet-file.ts')).fleetFromFlag(flags.fleet, 'mistral-7b-a6000'),
        };
  if (flags.repeats !== undefined && experiment.defaultRepeats === undefined)
    throw new Error(`--repeats: experiment '${name}' runs each cell once (only ${repeatable()} repeats)`);
  const repeats = flags.repeats ?? experiment.defaultRepeats;
  const out = flags.out ?? join('docs', 'results', name);
  await ensureWritableDir(out, '--out');
  const only = flags.only?.split(',').map((s) => s.trim());
  for (const [old, renamed] of Object.entries(experiment.renamedSeries ?? {})) {
    if (flags.only?.includes(old)) throw new Error(`--only: series '${old}' was renamed '${renamed}'`);
  }
  const planned = experiment.cells({
    requests,
    seed: flags.seed,
    ...(repeats === undefined ? {} : { repeats }),
    ...(only === undefined ? {} : { only }),
    ...(flags.azure === undefined ? {} : { azureTrace: flags.azure }),
    ...(flags.azureCode === undefined ? {} : { azureCodeTrace: flags.azureCode }),
    ...(flags.azureConv === undefined ? {} : { azureConvTrace: flags.azureConv }),
    ...(flags.mooncake === undefined ? {} : { mooncakeTrace: flags.mooncake }),
    ...(flags.bailian === undefined ? {} : { bailianTrace: flags.bailian }),
    ...(fleet === undefined ? {} : { fleet }),
  });
  if (planned.length === 0) throw new Error('no simulation to run (check --only)');
  const runs = new Set(planned.map((c) => c.spec.policy));
  const byPolicy = groupPolicyOptions(flags.policyOption, (text, policy) => {
    if (!runs.has(policy))
      throw new Error(
        `--policy-option ${text}: no simulation of '${name}' runs ${policy} (its policies: ${[...runs].join(', ')})`,
      );
  });
  const cells = withPolicyOptions(planned, byPolicy);
  buildEachOnce(cells, byPolicy.keys());
  const started = Date.now();
  const results = runCells(cells, (done, total, cell) =>
    process.stderr.write(
      `[${done}/${total}] ${cell.panel} | ${cell.series} @ ${cell.spec.rps} rps${cell.repeat ? `, seed ${cell.spec.seed}` : ''} (${Math.round((Date.now() - started) / 1000)} s)\n`,
    ),
  );
  const command = ['preble experiment', name, `--requests ${requests}`, `--seed ${flags.seed}`]
    .concat(repeats === undefined ? [] : [`--repeats ${repeats}`])
    .concat(flags.only === undefined ? [] : [`--only ${flags.only}`])
    .concat(flags.azure === undefined ? [] : [`--azure ${flags.azure}`])
    .concat(flags.azureCode === undefined ? [] : [`--azure-code ${flags.azureCode}`])
    .concat(flags.azureConv === undefined ? [] : [`--azure-conv ${flags.azureConv}`])
    .concat(flags.mooncake === undefined ? [] : [`--mooncake ${flags.mooncake}`])
    .concat(flags.bailian === undefined ? [] : [`--bailian ${flags.bailian}`])
    .concat(flags.fleet === undefined ? [] : [`--fleet ${flags.fleet}`])
    .concat(flags.policyOption.map((o) => `--policy-option ${o}`))
    .join(' ');
  const { markdown, plots } = renderReport(experiment, results, {
    command,
  });
  for (const plot of plots) await writePlot(out, plot);
  await writeFile(join(out, 'README.md'), markdown);
  await writeFile(
    join(out, 'results.json'),
    `${JSON.stringify(
      results.map((r) => ({
        panel: r.cell.panel,
        series: r.cell.series,
        ...(r.cell.repeat === undefined ? {} : { repeat: r.cell.repeat, seed: r.cell.spec.seed }),
        preemptions: r.preemptions,
        ...r.report,
      })),
      null,
      2,
    )}\n`,
  );
  const wrote = `wrote ${join(out, 'README.md')} (${results.length} simulations, ${Math.round((Date.now() - started) / 1000)} s)\n`;
  if (flags.json !== true) {
    process.stdout.write(wrote);
    return;
  }
  // The claims record (docs/design.md); experiments that state none print an empty list.
  process.stderr.write(wrote);
  process.stdout.write(
    `${JSON.stringify({ experiment: name, claims: experiment.claims?.(results) ?? [] })}\n`,
  );
}

/** The experiments that repeat their cells over seeds. */
function repeatable(): string {
  return experiments
    .filter((e) => e.defaultRepeats !== undefined)
    .map((e) => e.name)
    .join(', ');
}
