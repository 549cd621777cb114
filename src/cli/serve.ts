import { type Command, InvalidArgumentError } from 'commander';
import type { GatewayConfig } from '../gateway/config.ts';
import { isLlamaPreset, type LlamaPresetName } from '../real/gguf/presets.ts';
import { nonNegativeInt, nonNegativeNumber, positiveInt, positiveNumber } from './parse.ts';
import { parseSlo } from './plan.ts';
import { addRegistryHelp } from './registry-help.ts';

/** Flags override the config file; none has a default here, so the schema's defaults apply once. */
interface ServeFlags {
  config?: string;
  port?: number;
  host?: string;
  replica: string[];
  prefill: string[];
  decode: string[];
  dialect?: string;
  policy?: string;
  costModel?: string;
  kvTokens?: number;
  model?: string;
  seed?: number;
  poll?: number;
  tokenizer?: string;
  tokenizerThreads?: number;
  maxConcurrent?: number;
  maxQueue?: number;
  adminKeyEnv?: string;
  drain?: number;
  logLevel?: string;
  logBodies?: boolean;
  processMetrics?: boolean;
  advice?: boolean;
  adviceSlo?: { ttft: number; tpot: number };
  adviceInterval?: number;
  adviceWindow?: number;
  adviceHeadroom?: number;
  adviceAct?: boolean;
  adviceMin?: number;
  adviceMax?: number;
  llamaReplicas?: number;
  llamaPreset?: string;
  llamaModel?: string;
  llamaSlots?: number;
  llamaCtx?: number;
  llamaThreads?: number;
}

export function registerServe(program: Command): void {
  const command = program
    .command('serve')
    .description('OpenAI-compatible gateway that routes each request to a replica with a global policy')
    .option('--config <file>', 'YAML config (see docs/gateway.md); flags override its values')
    .option('--port <n>', 'port to listen on (0: any free port)', nonNegativeInt)
    .option('--host <h>', 'address to bind (default 127.0.0.1)')
    .option(
      '--replica <url>',
      "a replica base URL (repeat the flag for each; added to the config file's)",
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option(
      '--prefill <url>',
      'a prefill replica (prefill/decode disaggregation; repeat for each; needs a disaggregated --policy such as distserve)',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option(
      '--decode <url>',
      'a decode replica (prefill/decode disaggregation; repeat for each)',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option(
      '--dialect <name>',
      'dialect of the --replica, --prefill and --decode replicas: preble, vllm, sglang, llamacpp',
    )
    .option('--policy <name>', 'global policy (default e2)')
    .option('--cost-model <preset>', "cost-model preset of the replicas' hardware (default mistral-7b-a6000)")
    .option('--kv-tokens <n>', "replicas' KV capacity in tokens (default: the preset's)", positiveInt)
    .option('--model <name>', "the model the replicas serve (default: each replica's /v1/models says)")
    .option('--seed <s>', 'random seed', nonNegativeInt)
    .option(
      '--poll <seconds>',
      "seconds between polls of the replicas' /metrics (0: off; default 0.5)",
      nonNegativeNumber,
    )
    .option(
      '--tokenizer <mode>',
      "chars (default), backend (the replicas' /tokenize) or hf:PATH (a tokenizer.json)",
    )
    .option(
      '--tokenizer-threads <n>',
      'hf:PATH: threads encoding long prompts off the event loop (0: none; default: spare cores, 1-4)',
      nonNegativeInt,
    )
    .option('--max-concurrent <n>', 'requests forwarded at once (default: no limit)', positiveInt)
    .option(
      '--max-queue <n>',
      'requests that may wait for admission before 429s (default 1024)',
      nonNegativeInt,
    )
    .option('--admin-key-env <var>', 'environment variable holding the admin key (turns the admin API on)')
    .option(
      '--drain <seconds>',
      'seconds in-flight requests get to finish on SIGTERM, and on a replica --advice-act stops (default 30)',
      nonNegativeNumber,
    )
    .option('--log-level <level>', 'silent, error, warn (default), info or debug')
    .option('--log-bodies', 'log prompts at debug level (they may hold personal data)')
    .option('--process-metrics', "add Node's process metrics (heap, CPU, event loop) to /metrics")
    .option(
      '--advice',
      'live advice: the fleet the planner recommends for the traffic seen (docs/gateway.md)',
    )
    .option(
      '--advice-slo <targets>',
      'advice SLO targets in seconds: ttft=S,tpot=S (turns advice on)',
      adviceSlo,
    )
    .option(
      '--advice-interval <seconds>',
      'policy-clock seconds between recommendations (default 30)',
      positiveNumber,
    )
    .option(
      '--advice-window <seconds>',
      'policy-clock seconds of traffic each recommendation sees (default 300)',
      positiveNumber,
    )
    .option(
      '--advice-headroom <x>',
      'replicas = ceil(rate x headroom / capacity) (default 1.2)',
      positiveNumber,
    )
    .option(
      '--advice-act',
      'act on the advice: start or drain-then-stop the --llama-replicas this gateway started (never others)',
    )
    .option(
      '--advice-min <n>',
      'when acting: fewest replicas it keeps of its own (default 1)',
      nonNegativeInt,
    )
    .option('--advice-max <n>', 'when acting: most replicas it runs of its own (default 8)', positiveInt)
    .option(
      '--llama-replicas <n>',
      'start N llama.cpp replicas (as preble replicas start) that this gateway owns and stops on exit',
      positiveInt,
    )
    .option('--llama-preset <name>', 'their generated model size: tiny, small (default) or medium')
    .option('--llama-model <file>', 'a GGUF model for them instead of a generated one')
    .option('--llama-slots <n>', 'their concurrent sequences (-np; default 4)', positiveInt)
    .option('--llama-ctx <tokens>', 'their KV context, shared by the slots (-c; default 8192)', positiveInt)
    .option('--llama-threads <n>', 'their CPU threads (-t, -tb; default 1)', positiveInt)
    .action((flags: ServeFlags) => serve(flags));
  addRegistryHelp(command, ['policies', 'presets']);
}

/** `ttft=S,tpot=S` as `preble plan --slo` reads it, named for this flag. */
function adviceSlo(text: string): { ttft: number; tpot: number } {
  try {
    return parseSlo(text);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message.replace(/^--slo: /, ''));
  }
}

/** The config file with the flags laid over it, validated as one (errors name the field). */
export async function serveConfig(flags: ServeFlags): Promise<GatewayConfig> {
  // Loaded here rather than above (as in serve), so `preble --help` and a bad flag answer at once.
  const { parseGatewayConfig, readConfigFile } = await import('../gateway/config.ts');
  const raw: Record<string, unknown> = flags.config === undefined ? {} : readConfigFile(flags.config);
  const set = (key: string, value: unknown) => {
    if (value !== undefined) raw[key] = value;
  };
  const section = (key: string) => {
    const value = raw[key];
    const object = typeof value === 'object' && value !== null ? { ...(value as object) } : {};
    raw[key] = object;
    return object as Record<string, unknown>;
  };
  set('port', flags.port);
  set('host', flags.host);
  set('policy', flags.policy);
  set('costModel', flags.costModel);
  set('kvTokens', flags.kvTokens);
  set('model', flags.model);
  set('seed', flags.seed);
  set('pollSeconds', flags.poll);
  set('tokenizer', flags.tokenizer);
  set('tokenizerThreads', flags.tokenizerThreads);
  set('logLevel', flags.logLevel);
  set('logBodies', flags.logBodies);
  const flagged = [
    ...flags.replica.map((url) => ({ url, role: 'mixed' })),
    ...(flags.prefill ?? []).map((url) => ({ url, role: 'prefill' })),
    ...(flags.decode ?? []).map((url) => ({ url, role: 'decode' })),
  ];
  if (flagged.length > 0) {
    const fromFile = Array.isArray(raw['replicas']) ? (raw['replicas'] as unknown[]) : [];
    const fromFlags = flagged.map((r) => ({
      ...r,
      ...(flags.dialect === undefined ? {} : { dialect: flags.dialect }),
    }));
    raw['replicas'] = [...fromFile, ...fromFlags];
  }
  if (flags.maxConcurrent !== undefined) section('limits')['maxConcurrent'] = flags.maxConcurrent;
  if (flags.maxQueue !== undefined) section('limits')['maxQueue'] = flags.maxQueue;
  if (flags.adminKeyEnv !== undefined) section('auth')['adminKeyEnv'] = flags.adminKeyEnv;
  if (flags.drain !== undefined) section('shutdown')['drainSeconds'] = flags.drain;
  const adviceFlags = {
    ...(flags.adviceSlo === undefined ? {} : { slo: flags.adviceSlo }),
    ...(flags.adviceInterval === undefined ? {} : { intervalSeconds: flags.adviceInterval }),
    ...(flags.adviceWindow === undefined ? {} : { windowSeconds: flags.adviceWindow }),
    ...(flags.adviceHeadroom === undefined ? {} : { headroom: flags.adviceHeadroom }),
    ...(flags.adviceMin === undefined ? {} : { min: flags.adviceMin }),
    ...(flags.adviceMax === undefined ? {} : { max: flags.adviceMax }),
  };
  if (flags.adviceAct === true) Object.assign(adviceFlags, { act: true });
  if (flags.advice === true || Object.keys(adviceFlags).length > 0)
    Object.assign(section('advice'), adviceFlags);
  if (raw['port'] === undefined) throw new Error('--port: give a port (or port: in the config file)');
  const config = parseGatewayConfig(raw, flags.config ?? 'flags');
  if (flags.llamaPreset !== undefined && !isLlamaPreset(flags.llamaPreset))
    throw new Error(`--llama-preset: expected tiny, small or medium, got '${flags.llamaPreset}'`);
  if (config.advice?.act === true && flags.llamaReplicas === undefined)
    throw new Error('advice.act: acts only on replicas this gateway started; give --llama-replicas N');
  if (config.replicas.length === 0 && flags.llamaReplicas === undefined)
    throw new Error(
      'replicas: give at least one (--replica URL, --prefill URL and --decode URL, or replicas: in the config file)',
    );
  return config;
}

async function serve(flags: ServeFlags): Promise<void> {
  const config = await serveConfig(flags);
  const [
    { costModelPreset },
    { createGlobalPolicy },
    { normalizeReplicas, resolveSecret },
    { createGateway },
  ] = await Promise.all([
    import('../core/cost-model/presets.ts'),
    import('../core/policies/registry.ts'),
    import('../gateway/config.ts'),
    import('../gateway/server.ts'),
  ]);
  const { loadLocalTokenizer } = await import('../text/tokenizer-mode.ts');
  const [{ poolEvaluator }, { defaultCacheDir, directoryCache }] = await Promise.all([
    import('../gateway/advice/advisor.ts'),
    import('../search/cache.ts'),
  ]);
  const costModel = costModelPreset(
    config.costModel,
    config.kvTokens === undefined ? {} : { kvCapacityTokens: config.kvTokens },
  );
  // One policy per model's pool of replicas; an unknown name fails here, at start-up.
  const createPolicy = () =>
    createGlobalPolicy(config.policy, { costModel, seed: config.seed }, config.policyOptions);
  createPolicy();
  const keys = config.auth.keys.map((k, i) => ({
    name: k.name,
    key: resolveSecret(k.key, k.keyEnv, `auth.keys.${i}.keyEnv`, process.env)!,
    ratePerSecond: k.ratePerSecond,
    burst: k.burst,
  }));
  const adminKey = resolveSecret(
    config.auth.adminKey,
    config.auth.adminKeyEnv,
    'auth.adminKeyEnv',
    process.env,
  );
  // Loaded last, so that no error above leaves its threads behind; the gateway closes it.
  const tokenizer =
    (await loadLocalTokenizer(
      config.tokenizer,
      config.tokenizerThreads === undefined ? {} : { threads: config.tokenizerThreads },
    )) ?? 'backend';
  const launcher = flags.llamaReplicas === undefined ? undefined : await llamaReplicaLauncher(flags);
  const gateway = createGateway({
    ...(launcher === undefined ? {} : { launcher }),
    createPolicy,
    replicas: normalizeReplicas(config),
    replicaKvTokens: costModel.kvCapacityTokens,
    tokenizer,
    pollSeconds: config.pollSeconds,
    tickSeconds: config.tickSeconds,
    timeScale: config.timeScale,
    limits: config.limits,
    timeouts: config.timeouts,
    retries: config.retries,
    health: config.health,
    breaker: config.breaker,
    auth: { keys, adminKey },
    drainSeconds: config.shutdown.drainSeconds,
    logLevel: config.logLevel,
    logBodies: config.logBodies,
    processMetrics: flags.processMetrics === true,
    ...(config.model === undefined ? {} : { model: config.model }),
    ...(config.advice === undefined
      ? {}
      : {
          advice: {
            config: config.advice,
            costModel: config.costModel,
            seed: config.seed,
            // Capacities are cached where `preble plan` keeps its own, so a restart measures nothing twice.
            evaluate: poolEvaluator(directoryCache(defaultCacheDir())),
          },
        }),
  });
  const url = await (async () => {
    // Its own replicas first, one at a time; any failure closes the gateway, which stops them.
    for (let i = 0; i < (flags.llamaReplicas ?? 0); i++) {
      await gateway.actor!.adopt('mixed', await launcher!.start('mixed'));
    }
    const listening = await gateway.listen(config.port, config.host);
    if (launcher !== undefined) launcher.serving = true;
    return listening;
  })().catch(async (error: unknown) => {
    await gateway.close();
    throw error;
  });
  process.stdout.write(`listening on ${url}\n`);
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      process.stderr.write(`preble serve: ${signal}, draining (up to ${config.shutdown.drainSeconds} s)\n`);
      gateway.close().then(resolve, resolve);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}

/** The launcher of `--llama-replicas`: the llama-server build and model `preble replicas start` uses. */
async function llamaReplicaLauncher(flags: ServeFlags) {
  const [{ existsSync }, { resolve }, { ensureLlamaServer }, { cachedModel }, { startOne, urlOf }] =
    await Promise.all([
      import('node:fs'),
      import('node:path'),
      import('../real/llama-build.ts'),
      import('../real/model-cache.ts'),
      import('../real/replicas.ts'),
    ]);
  const progress = (line: string) => process.stderr.write(`preble serve: ${line}\n`);
  let model: string;
  if (flags.llamaModel !== undefined) {
    model = resolve(flags.llamaModel);
    if (!existsSync(model)) throw new Error(`--llama-model: no such file: ${model}`);
  } else model = await cachedModel((flags.llamaPreset ?? 'small') as LlamaPresetName, 0, progress);
  const binary = await ensureLlamaServer({ onProgress: progress });
  const options = {
    binary,
    model,
    count: 1,
    slots: flags.llamaSlots ?? 4,
    ctx: flags.llamaCtx ?? 8192,
    threads: flags.llamaThreads ?? 1,
    cacheRamMiB: 0,
  };
  let index = 0;
  // Each start is one llama-server on a free port (as `preble replicas start`), healthy (model
  // loaded) before it joins the fleet, and stopped by its PID; the lines name the PID, so that an
  // operator (and test-real/llama-advice-act.test.ts) can see the process come and go.
  // Mixed only: prefill and decode llama.cpp replicas need a shared slot directory.
  const launcher: import('../gateway/advice/actor.ts').ReplicaLauncher & { serving: boolean } = {
    serving: false,
    dialect: 'llamacpp',
    roles: ['mixed'],
    async start() {
      const { proc, port } = await startOne(options, index++, undefined).catch((error: Error) => {
        // At start-up the command's own error says it; later only this line and the advice's note do.
        if (launcher.serving)
          progress(`could not start a llama.cpp replica: ${error.message.split('\n')[0]}`);
        throw error;
      });
      const url = urlOf('127.0.0.1', port);
      progress(`started llama.cpp replica ${url} (pid ${proc.pid})`);
      let stopping = false;
      // A replica that dies unasked is an operator's business: say how, with its last words (its
      // requests fail over through the breaker; the fleet does not restart it).
      // 'close', not 'exit': its pipes are drained by then, so the last lines (an assert) are in.
      proc.child.once('close', () => {
        if (!stopping)
          progress(
            `llama.cpp replica ${url} (pid ${proc.pid}) ${proc.howItEnded}; its last output:\n${proc.lastLines()}`,
          );
      });
      return {
        url,
        async stop() {
          stopping = true;
          await proc.stop(5000);
          progress(`stopped llama.cpp replica ${url} (pid ${proc.pid})`);
        },
      };
    },
  };
  return launcher;
}
