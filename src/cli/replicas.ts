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
  count: number;
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
    .requiredOption('--count <n>', 'number of replicas', positiveInt)
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
  const model = await modelPath(flags); // first: a bad --model should fail before a long build
  const [{ ensureLlamaServer }, { startLlamaReplicas }] = await Promise.all([
    import('../real/llama-build.ts'),
    import('../real/replicas.ts'),
  ]);
  const binary = await ensureLlamaServer({ onProgress: progress });
  const fleet = await startLlamaReplicas({
    binary,
    model,
    count: flags.count,
    threads: flags.threads,
    slots: flags.slots,
    ctx: flags.ctx,
    cacheRamMiB: flags.cacheRam,
    host: flags.host,
  });
  fleet.urls.forEach((url, i) => {
    process.stdout.write(`replica ${i} listening on ${url}\n`);
  });
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
