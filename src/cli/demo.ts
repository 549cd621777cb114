import type { Command } from 'commander';
import type { DemoListener, DemoOptions, DemoResult } from '../demo/demo.ts';
import { fixed, textTable } from '../report/text-table.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';
import { createProgress, type Progress } from './progress.ts';
import { addRegistryHelp } from './registry-help.ts';

/** What the demo runs on, loaded when it runs rather than with the CLI (so `preble --help` answers at once). */
async function load() {
  const [
    core,
    policies,
    demo,
    emulated,
    llama,
    render,
    sharedPrefix,
    presets,
    build,
    modelCache,
    sim,
    chars,
    verdict,
    pd,
    pdSim,
  ] = await Promise.all([
    import('../core/cost-model/presets.ts'),
    import('../core/policies/registry.ts'),
    import('../demo/demo.ts'),
    import('../demo/emulated-fleet.ts'),
    import('../demo/llama-fleet.ts'),
    import('../demo/render.ts'),
    import('../demo/shared-prefix.ts'),
    import('../real/gguf/presets.ts'),
    import('../real/llama-build.ts'),
    import('../real/model-cache.ts'),
    import('../sim/run.ts'),
    import('../text/chars-tokenizer.ts'),
    import('../demo/verdict.ts'),
    import('../demo/pd.ts'),
    import('./demo-pd-sim.ts'),
  ]);
  const workloads = await import('../workloads/registry.ts');
  return {
    ...core,
    ...policies,
    ...demo,
    ...emulated,
    ...llama,
    ...render,
    ...sharedPrefix,
    ...presets,
    ...build,
    ...modelCache,
    ...sim,
    ...chars,
    ...verdict,
    ...pd,
    ...pdSim,
    ...workloads,
  };
}
type Modules = Awaited<ReturnType<typeof load>>;

interface DemoFlags {
  real?: boolean;
  pd?: boolean;
  replicas?: number;
  workload?: string;
  requests?: number;
  rps?: number;
  policy?: string;
  model: string;
  timeScale?: number;
  seed: number;
  preset: string;
  slots: number;
  ctx: number;
  repeats?: number;
  json?: boolean;
}

/** The real demo's stream: 8 long shared prefixes, short unique suffixes, fixed short answers. */
const REAL_STREAM = { prefixes: 8, prefixChars: 1500, suffixChars: 40, outputTokens: 8 } as const;

/** The demo's default comparison: ours, the paper's, the router users already have, two baselines. */
const EMULATED_POLICIES = 'e2-plus,e2,cache-aware,least-load,round-robin';
const REAL_POLICIES = 'e2-plus,e2,cache-aware,round-robin';

/** `--pd`'s default configurations (src/demo/pd.ts PD_CONFIGURATIONS, kept here so --help loads nothing). */
const PD_DEFAULT = 'e2-plus@4M,distserve@2P2D,prefix-pd@2P2D,prefix-pd@1P1D2M';

/**
 * `--pd --real`'s stream and configurations: on one CPU thread a 1,500-token prompt takes about a second
 * and a token about 5 ms, so colocated prefills stall the decodes beside them for that long.
 */
const PD_REAL_STREAM = { prefixes: 8, prefixChars: 1500, suffixChars: 40, outputTokens: 64 } as const;
const PD_REAL_DEFAULT = 'e2-plus@2M,distserve@1P1D,prefix-pd@1P1D';

/** The cost-model preset fitted to the CPU llama.cpp replicas (docs/results/calibration). */
const REAL_COST_MODEL = 'llamacpp-small-cpu';

export function registerDemo(program: Command): void {
  const command = program
    .command('demo')
    .description(
      'replicas + the gateway on local ports, a shared-prefix workload over real HTTP, policies compared',
    )
    .option('--real', 'real llama.cpp replicas (built once, cached) instead of emulated ones')
    .option(
      '--pd',
      "prefill/decode disaggregation: colocated and disaggregated configurations (POLICY@FLEET) on the same GPUs, with TTFT, TPOT, the legs and the simulator's prediction (emulated replicas; with --real, llama.cpp replicas moving slots through a shared directory)",
    )
    .option('--replicas <n>', 'replicas (default 4 emulated, 2 real and --pd --real)', positiveInt)
    .option(
      '--workload <name>',
      'workload generator (emulated replicas; default video-qa, with --pd long shared documents and long answers)',
    )
    .option(
      '--requests <n>',
      'requests per policy (default 300 emulated, 200 --pd, 40 real, 30 --pd --real)',
      positiveInt,
    )
    .option(
      '--rps <r>',
      "arrival rate in the replicas' seconds (default 6 emulated, 4 --pd, 0.6 real, 0.5 --pd --real)",
      positiveNumber,
    )
    .option(
      '--policy <list>',
      `policies to compare, or 'all' (default ${EMULATED_POLICIES}; real: ${REAL_POLICIES}; --pd: POLICY@FLEET items, default ${PD_DEFAULT})`,
    )
    .option('--model <preset>', "emulated replicas' cost-model preset", 'mistral-7b-a6000')
    .option(
      '--time-scale <x>',
      'emulated replicas run this much faster than real time (default 10; --pd 1: its two-leg streams load one process, and faster runs drift from the simulator on a busy machine)',
      positiveNumber,
    )
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option('--preset <size>', 'real: model size (tiny, small, medium)', 'small')
    .option('--slots <n>', 'real: slots per replica (-np)', positiveInt, 4)
    .option('--ctx <n>', 'real: KV context per replica (-c)', positiveInt, 16_384)
    .option(
      '--repeats <n>',
      'runs of each policy; the verdict states their spread (default 2 emulated, 1 --pd and real)',
      positiveInt,
    )
    .option('--json', 'print one JSON object on stdout')
    .action((flags: DemoFlags) => demo(flags));
  addRegistryHelp(command, ['policies', 'presets', 'workloads']);
}

async function demoOptions(flags: DemoFlags, m: Modules): Promise<DemoOptions> {
  const {
    createWorkload,
    renderTokens,
    parsePolicyList,
    emulatedFleet,
    isLlamaPreset,
    sharedPrefixRequests,
  } = m;
  const { ensureLlamaServer, cachedModel, decodeChars, llamaFleet } = m;
  const seed = flags.seed;
  if (flags.pd === true) return pdOptions(flags, m);
  if (flags.real !== true) {
    const workload = flags.workload ?? 'video-qa';
    const timeScale = flags.timeScale ?? 10;
    const requests = flags.requests ?? 300;
    const rps = flags.rps ?? 6;
    const replicas = flags.replicas ?? 4;
    const repeats = flags.repeats ?? 2;
    process.stderr.write(
      `${replicas} emulated ${flags.model} replicas (${timeScale}x real time) behind the gateway; ` +
        `${requests} ${workload} requests at ${rps} req/s per policy, ${repeats} run(s) each\n`,
    );
    return {
      replicas,
      workload,
      requests: [...createWorkload(workload, { requests, rps, seed, instances: replicas })],
      render: renderTokens,
      rps,
      policies: parsePolicyList(flags.policy ?? EMULATED_POLICIES),
      repeats,
      model: flags.model,
      costModel: flags.model,
      timeScale,
      seed,
      fleet: emulatedFleet(flags.model, timeScale),
    };
  }
  if (!isLlamaPreset(flags.preset))
    throw new Error(`--preset: expected tiny, small or medium, got '${flags.preset}'`);
  const policies = parsePolicyList(flags.policy ?? REAL_POLICIES);
  const replicas = flags.replicas ?? 2;
  const rps = flags.rps ?? 0.6;
  const requests = sharedPrefixRequests({
    ...REAL_STREAM,
    requests: flags.requests ?? 40,
    rps,
    seed,
  });
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const binary = await ensureLlamaServer({ onProgress: progress });
  const model = await cachedModel(flags.preset, seed, progress);
  process.stderr.write(
    `${replicas} llama-server replicas (${flags.preset} model, 1 thread, ${flags.slots} slots, ${flags.ctx} tokens of KV, ` +
      `no RAM prompt cache) behind the gateway; ${requests.length} requests (${REAL_STREAM.prefixes} shared ${REAL_STREAM.prefixChars}-character prefixes) at ${rps} req/s per policy\n`,
  );
  return {
    replicas,
    workload: 'shared-prefix',
    requests,
    render: decodeChars,
    rps,
    policies,
    model: 'preble-llama',
    costModel: REAL_COST_MODEL,
    // A slot holds one sequence: the replica caches `slots` prompts, whatever its total context.
    replicaKvTokens: realSlotKvTokens(flags.slots, REAL_STREAM),
    timeScale: 1,
    seed,
    fleet: llamaFleet({ binary, model, slots: flags.slots, ctx: flags.ctx }),
    repeats: flags.repeats ?? 1,
    // Random weights may sample EOS at any step: fixed lengths make the policies' work comparable.
    extraBody: { ignore_eos: true, temperature: 0 },
  };
}

/** `--pd`: the configurations on emulated replicas (or llama.cpp ones with --real), one run each unless --repeats. */
async function pdOptions(flags: DemoFlags, m: Modules): Promise<DemoOptions> {
  const {
    createWorkload,
    renderTokens,
    emulatedFleet,
    sharedPrefixRequests,
    parsePdConfigurations,
    PD_STREAM,
    isLlamaPreset,
  } = m;
  const seed = flags.seed;
  const real = flags.real === true;
  if (real && flags.workload !== undefined)
    throw new Error('--pd --real runs its own shared-document stream; --workload is for emulated replicas');
  const replicas = flags.replicas ?? (real ? 2 : 4);
  const costModel = real ? REAL_COST_MODEL : flags.model;
  const configurations = parsePdConfigurations(
    flags.policy ?? (real ? PD_REAL_DEFAULT : PD_DEFAULT),
    replicas,
    costModel,
  );
  const count = flags.requests ?? (real ? 30 : 200);
  const rps = flags.rps ?? (real ? 0.5 : 4);
  const repeats = flags.repeats ?? 1;
  const timeScale = real ? 1 : (flags.timeScale ?? 1);
  const workload = flags.workload ?? 'shared-prefix';
  const stream = real ? PD_REAL_STREAM : PD_STREAM;
  const requests =
    flags.workload === undefined
      ? sharedPrefixRequests({ ...stream, requests: count, rps, seed })
      : [...createWorkload(flags.workload, { requests: count, rps, seed, instances: replicas })];
  const gpus = [...new Set(configurations.map((c) => c.roles.length))].join(' or ');
  const what =
    workload === 'shared-prefix'
      ? `shared-prefix requests (${stream.prefixes} ${stream.prefixChars}-token documents, ${stream.suffixChars}-token questions, ${stream.outputTokens}-token answers)`
      : `${workload} requests`;
  const names = configurations.map((c) => c.name).join(', ');
  const common = { replicas, workload, requests, rps, repeats, seed };
  const policies = configurations.map((c) => c.policy);
  if (!real) {
    process.stderr.write(
      `${names}: ${gpus} emulated ${flags.model} replicas each (${timeScale}x real time, KV over the emulated 25 GB/s link) ` +
        `behind the gateway; ${count} ${what} at ${rps} req/s, ${repeats} run(s) each\n`,
    );
    return {
      ...common,
      render: renderTokens,
      policies,
      configurations,
      model: flags.model,
      costModel,
      timeScale,
      fleet: emulatedFleet(flags.model, timeScale),
    };
  }
  const { ensureLlamaServer, cachedModel, decodeChars, llamaFleet } = m;
  const preset = flags.preset;
  if (!isLlamaPreset(preset)) throw new Error(`--preset: expected tiny, small or medium, got '${preset}'`);
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const binary = await ensureLlamaServer({ onProgress: progress });
  const model = await cachedModel(preset, seed, progress);
  process.stderr.write(
    `${names}: ${gpus} llama-server replicas each (${flags.preset} model, 1 thread, ${flags.slots} slots, ${flags.ctx} tokens of KV; ` +
      `prefilled slots move through a shared --slot-save-path) behind the gateway; ${count} ${what} at ${rps} req/s, ${repeats} run(s) each\n`,
  );
  return {
    ...common,
    render: decodeChars,
    policies,
    configurations,
    model: 'preble-llama',
    costModel,
    replicaKvTokens: realSlotKvTokens(flags.slots, stream),
    timeScale,
    fleet: llamaFleet({ binary, model, slots: flags.slots, ctx: flags.ctx }),
    // Random weights may sample EOS at any step: fixed lengths make the configurations' work comparable.
    extraBody: { ignore_eos: true, temperature: 0 },
  };
}

/** A slot holds one sequence: a llama.cpp replica caches `slots` prompts, whatever its total context. */
function realSlotKvTokens(
  slots: number,
  stream: { prefixChars: number; suffixChars: number; outputTokens: number },
): number {
  return slots * (stream.prefixChars + stream.suffixChars + stream.outputTokens + 1);
}

/** The simulator's prediction for the same stream on the same number of replicas (real runs). */
function predictedMeanLatency(options: DemoOptions, policy: string, slots: number, m: Modules): number {
  const { runSimulation, costModelPreset } = m;
  const { report } = runSimulation({
    policy,
    workload: options.workload,
    instances: options.replicas,
    rps: options.rps,
    costModel: costModelPreset(
      options.costModel,
      options.replicaKvTokens === undefined ? {} : { kvCapacityTokens: options.replicaKvTokens },
    ),
    requests: () => options.requests,
    seed: options.seed,
    // llama.cpp's engine: a slot per running request, and a busy slot's prefix is not shared.
    maxRunning: slots,
    exclusivePrefixes: true,
  });
  return report.latency.mean;
}

async function demo(flags: DemoFlags): Promise<void> {
  const m = await load();
  const options = await demoOptions(flags, m);
  const results = await m.runDemo(options, demoListener(options));
  if (flags.pd === true) return pdReport(flags, options, results, m);
  const real = flags.real === true;
  const predicted = real
    ? new Map(options.policies.map((p) => [p, predictedMeanLatency(options, p, flags.slots, m)]))
    : undefined;
  const verdict = m.demoVerdict(results);
  if (flags.json) {
    const out = results.map((r) =>
      predicted === undefined ? r : { ...r, simMeanLatency: predicted.get(r.policy) },
    );
    process.stdout.write(
      `${JSON.stringify({ results: out, verdict: { winner: verdict.winner, evenWith: verdict.evenWith, summaries: verdict.summaries } })}\n`,
    );
    return;
  }
  process.stdout.write(`\n${demoTable(results, predicted)}\n\n`);
  process.stdout.write(
    real
      ? `Real computation on llama-server (random weights). "sim" is preble sim's prediction for the same stream with the ${REAL_COST_MODEL} preset.\n`
      : "Times are in the replicas' emulated seconds.\n",
  );
  process.stdout.write(`\n${verdict.lines.join('\n')}\n`);
}

/** Progress on stderr: a bar per run on a terminal, a line per run elsewhere (never silence). */
function demoListener(options: DemoOptions): DemoListener {
  let bar: Progress | undefined;
  return {
    started: (policy, run, index, total) => {
      const label = `${policy} run ${run} (${index}/${total})`;
      if (process.stderr.isTTY) bar = createProgress(options.requests.length, label);
      else process.stderr.write(`${label}: ${options.requests.length} requests...\n`);
    },
    progress: (finished) => bar?.update(finished),
    finished: (r) => {
      bar?.stop();
      bar = undefined;
      process.stderr.write(
        r.pd === undefined
          ? `${r.policy} run ${r.run}: mean latency ${r.latency.mean.toFixed(2)} s, cached share ${r.cacheHitRate.toFixed(2)}, ${r.wallSeconds.toFixed(1)} s wall\n`
          : `${r.configuration} run ${r.run}: mean TTFT ${r.ttft.mean.toFixed(3)} s, TPOT ${(r.tpot.mean * 1000).toFixed(1)} ms, latency ${r.latency.mean.toFixed(2)} s, ${r.pd.disaggregated}/${r.completed} disaggregated, ${r.wallSeconds.toFixed(1)} s wall\n`,
      );
    },
  };
}

function demoTable(
  results: readonly DemoResult[],
  predicted: ReadonlyMap<string, number> | undefined,
): string {
  const real = predicted !== undefined;
  const head = [
    'policy',
    'run',
    'lat mean s',
    'lat p99 s',
    'ttft mean s',
    'ttft p99 s',
    'cached share',
    'requests per replica',
  ];
  if (real) head.push('prompt s per replica', 'wall s', 'sim mean s', 'sim error');
  // Runs come policy after policy within each repeat; the table groups each policy's runs.
  const firstSeen = new Map<string, number>();
  for (const [i, r] of results.entries()) if (!firstSeen.has(r.policy)) firstSeen.set(r.policy, i);
  const ordered = [...results].sort(
    (a, b) => firstSeen.get(a.policy)! - firstSeen.get(b.policy)! || a.run - b.run,
  );
  return textTable(
    head,
    ordered.map((r) => {
      const row = [
        r.policy,
        String(r.run),
        fixed(r.latency.mean, 2),
        fixed(r.latency.p99, 2),
        fixed(r.ttft.mean, 2),
        fixed(r.ttft.p99, 2),
        fixed(r.cacheHitRate, 3),
        r.perInstance.map((p) => p.requests).join(' / '),
      ];
      if (real) {
        const sim = predicted.get(r.policy) ?? 0;
        row.push(
          r.perInstance.map((p) => fixed(p.promptSeconds ?? 0, 1)).join(' / '),
          fixed(r.wallSeconds, 1),
          fixed(sim, 2),
          `${(((sim - r.latency.mean) / r.latency.mean) * 100).toFixed(0)}%`,
        );
      }
      return row;
    }),
  );
}

/** `--pd`'s output: the table (or JSON) with the simulator's prediction beside each configuration, and the verdict. */
function pdReport(flags: DemoFlags, options: DemoOptions, results: readonly DemoResult[], m: Modules): void {
  const sims = new Map(
    (options.configurations ?? []).map((c) => [
      c.name,
      m.pdSimulation(c, {
        workload: options.workload,
        rps: options.rps,
        requests: options.requests,
        model: options.costModel,
        seed: options.seed,
        ...(flags.real === true
          ? {
              kvCapacityTokens: options.replicaKvTokens,
              maxRunning: flags.slots,
              exclusivePrefixes: true,
              link: 'pcie-host' as const,
            }
          : {}),
      }),
    ]),
  );
  const verdict = m.pdVerdict(results);
  if (flags.json) {
    const out = results.map((r) => {
      const sim = sims.get(r.configuration ?? '');
      return {
        ...r,
        sim:
          sim === undefined
            ? undefined
            : {
                latency: sim.latency,
                ttft: sim.ttft,
                tpot: sim.tpot,
                cacheHitRate: sim.cacheHitRate,
                ...(sim.transfer === undefined ? {} : { transfer: sim.transfer }),
                ...(sim.kvMoved === undefined ? {} : { kvMoved: sim.kvMoved }),
                branches: sim.branches,
              },
      };
    });
    process.stdout.write(
      `${JSON.stringify({ results: out, verdict: { ttftWinner: verdict.ttftWinner, tpotWinner: verdict.tpotWinner, summaries: verdict.summaries, lines: verdict.lines } })}\n`,
    );
    return;
  }
  const rows = results.map((r) => {
    const sim = sims.get(r.configuration ?? '');
    const leg = (x: number | undefined) => (x === undefined ? '-' : fixed(x, 3));
    return [
      r.configuration ?? r.policy,
      String(r.run),
      `${fixed(r.ttft.mean, 3)} / ${fixed(r.ttft.p50, 3)} / ${fixed(r.ttft.p99, 3)}`,
      `${fixed(r.tpot.mean * 1000, 1)} / ${fixed(r.tpot.p50 * 1000, 1)} / ${fixed(r.tpot.p99 * 1000, 1)}`,
      `${fixed(r.latency.mean, 2)} / ${fixed(r.latency.p99, 2)}`,
      String(r.pd?.disaggregated ?? 0),
      `${leg(r.pd?.prefillSeconds)} / ${leg(r.pd?.transferSeconds)} / ${leg(r.pd?.decodeTtftSeconds)}`,
      leg(r.pd?.prefillQueueSeconds),
      r.pd?.prefillCachedShare !== undefined
        ? fixed(r.pd.prefillCachedShare, 2)
        : (r.pd?.disaggregated ?? 0) === 0
          ? fixed(r.cacheHitRate, 2)
          : '-',
      sim === undefined
        ? '-'
        : `${fixed(sim.ttft.mean, 3)} / ${fixed(sim.tpot.mean * 1000, 1)} / ${fixed(sim.latency.mean, 2)}`,
    ];
  });
  process.stdout.write(
    `\n${textTable(
      [
        'configuration',
        'run',
        'ttft s mean/p50/p99',
        'tpot ms mean/p50/p99',
        'lat s mean/p99',
        'disagg',
        'prefill / xfer / decode-ttft s',
        'mixed queue s',
        'cached',
        'sim ttft s / tpot ms / lat s',
      ],
      rows,
    )}\n\n`,
  );
  process.stdout.write(
    (flags.real === true
      ? 'Times are wall seconds (llama-server replicas, one CPU thread each; xfer: slot save, file, restore). '
      : "Times are in the replicas' emulated seconds. ") +
      'disagg: requests whose prefill and decode replicas differ; ' +
      "prefill / xfer / decode-ttft: the gateway's per-leg means; mixed queue: waiting before admission on the mixed replicas (prefill-role engines do not report it); " +
      'cached: cached share of the prompt tokens those replicas looked up. sim: preble sim on the same fleet, stream and link' +
      (flags.real === true
        ? " (llamacpp-small-cpu's fit, a slot's prompt cache, the host-copy link class; the slot files' real cost is in xfer).\n"
        : '.\n'),
  );
  process.stdout.write(`\n${verdict.lines.join('\n')}\n`);
}
