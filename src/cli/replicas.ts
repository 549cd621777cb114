import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { isLlamaPreset, type LlamaPresetName } from '../real/gguf/presets.ts';
import { nonNegativeInt, nonNegativeNumber, positiveInt } from './parse.ts';

interface ModelFlags {
  preset: LlamaPresetName;
  seed: number;
  out: string;
}

interface StartFlags {
  count?: number;
  prefill?: number;
  decode?: number;
  slotSavePath?: string;
  preset: LlamaPresetName;
  seed: number;
  model?: string;
  slots: number;
  ctx: number;
  threads: number;
  cacheRam: number;
  host: string;
  grace: number;
}

function preset(value: string): LlamaPresetName {
  if (!isLlamaPreset(value)) throw new InvalidArgumentError(`expected tiny, small or medium, got '${value}'`);
  return value;
}

const progress = (line: string) => process.stderr.write(`preble replicas: ${line}\n`);

export function registerReplicas(program: Command): void {
  const replicas = program
    .command('replicas')
    .description('real llama.cpp replicas (llama-server built from source, random-weight models)')
    .exitOverride();

  replicas
    .command('build')
    .description('build llama-server (or reuse the cached one) and print its path')
    .action(async () => {
      const { ensureLlamaServer } = await import('../real/llama-build.ts');
      process.stdout.write(`${await ensureLlamaServer({ onProgress: progress })}\n`);
    });

  replicas
    .command('model')
    .description('write a llama GGUF with random weights and a character-level vocabulary')
    .option('--preset <name>', 'model size: tiny, small or medium', preset, 'small')
    .option('--seed <s>', 'random seed (the same seed gives the same bytes)', nonNegativeInt, 0)
    .requiredOption('--out <file>', 'GGUF file to write')
    .action(async (flags: ModelFlags) => {
      const { writeGgufModel } = await import('../real/gguf/llama-model.ts');
      const info = await writeGgufModel({ preset: flags.preset, seed: flags.seed, path: resolve(flags.out) });
      process.stdout.write(
        `${info.path}: ${flags.preset}, ${info.parameters} parameters, ${info.bytes} bytes\n`,
      );
    });

  replicas
    .command('start')
    .description('start N llama-server replicas and run until SIGTERM or SIGINT')
    .option('--count <n>', 'number of (mixed) replicas', positiveInt)
    .option(
      '--prefill <n>',
      'prefill replicas for prefill/decode disaggregation (with --decode; they share --slot-save-path)',
      positiveInt,
    )
    .option('--decode <n>', 'decode replicas for prefill/decode disaggregation (with --prefill)', positiveInt)
    .option(
      '--slot-save-path <dir>',
      'directory every replica saves and restores slots in (--slot-save-path; default with --prefill: a fresh temporary one)',
    )
    .option('--preset <name>', 'generated model size when --model is not given', preset, 'small')
    .option('--seed <s>', "generated model's seed", nonNegativeInt, 0)
    .option('--model <file>', 'a GGUF model to serve instead of a generated one')
    .option('--slots <n>', 'concurrent sequences per replica (-np)', positiveInt, 4)
    .option('--ctx <tokens>', 'KV context per replica, shared by its slots (-c)', positiveInt, 8192)
    .option('--threads <n>', 'CPU threads per replica (-t, -tb)', positiveInt, 1)
    .option('--cache-ram <MiB>', 'host-RAM prompt cache per replica (--cache-ram; 0: off)', nonNegativeInt, 0)
    .option('--host <h>', 'address the replicas listen on', '127.0.0.1')
    .option('--grace <s>', 'seconds between SIGTERM and SIGKILL on shutdown', nonNegativeNumber, 5)
    .action((flags: StartFlags) => startReplicas(flags));
}

/** The model to serve: the given file, or a generated one cached by preset and seed. */
async function modelPath(flags: StartFlags): Promise<string> {
  if (flags.model !== undefined) {
    const path = resolve(flags.model);
    if (!existsSync(path)) throw new Error(`--model: no such file: ${path}`);
    return path;
  }
  const { cachedModel } = await import('../real/model-cache.ts');
  return cachedModel(flags.preset, flags.seed, progress);
}

async function startReplicas(flags: StartFlags): Promise<void> {
  const pd = flags.prefill !== undefined || flags.decode !== undefined;
  if (pd && (flags.prefill === undefined || flags.decode === undefined))
    throw new Error('--prefill and --decode go together');
  if (pd && flags.count !== undefined) throw new Error('--count or --prefill/--decode, not both');
  if (!pd && flags.count === undefined) throw new Error('give --count, or --prefill and --decode');
  const model = await modelPath(flags); // first: a bad --model should fail before a long build
  const [{ ensureLlamaServer }, { startLlamaReplicas, startLlamaPdReplicas }] = await Promise.all([
    import('../real/llama-build.ts'),
    import('../real/replicas.ts'),
  ]);
  const binary = await ensureLlamaServer({ onProgress: progress });
  const common = {
    binary,
    model,
    threads: flags.threads,
    slots: flags.slots,
    ctx: flags.ctx,
    cacheRamMiB: flags.cacheRam,
    host: flags.host,
    ...(flags.slotSavePath === undefined ? {} : { slotSavePath: flags.slotSavePath }),
  };
  let fleet: import('../real/replicas.ts').LlamaReplicas;
  if (pd) {
    const pdFleet = await startLlamaPdReplicas({ ...common, prefill: flags.prefill!, decode: flags.decode! });
    fleet = pdFleet;
    pdFleet.prefillUrls.forEach((url, i) => {
      process.stdout.write(`prefill replica ${i} listening on ${url}\n`);
    });
    pdFleet.decodeUrls.forEach((url, i) => {
      process.stdout.write(`decode replica ${i} listening on ${url}\n`);
    });
    process.stdout.write(`slot save path ${pdFleet.slotSavePath}\n`);
    const urls = [
      ...pdFleet.prefillUrls.map((u) => `--prefill ${u}`),
      ...pdFleet.decodeUrls.map((u) => `--decode ${u}`),
    ];
    process.stdout.write(`gateway: preble serve --policy distserve --dialect llamacpp ${urls.join(' ')}\n`);
  } else {
    fleet = await startLlamaReplicas({ ...common, count: flags.count! });
    fleet.urls.forEach((url, i) => {
      process.stdout.write(`replica ${i} listening on ${url}\n`);
    });
  }
  process.stdout.write('ready\n');
  await new Promise<void>((done) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      progress(`${signal}, stopping replicas ${fleet.pids.join(', ')}`);
      fleet.stop(flags.grace * 1000).then(done, done);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
