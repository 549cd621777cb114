import { type Command, InvalidArgumentError } from 'commander';
import { createEngineServer, DEFAULT_MODEL, DEFAULT_QUEUE_POLICY } from '../emulator/server.ts';
import { nonNegativeInt, positiveInt, positiveNumber } from './parse.ts';

interface EngineFlags {
  port: number;
  host: string;
  model: string;
  kvTokens?: number;
  queuePolicy: string;
  timeScale: number;
  seed: number;
  bodyLimit: number;
  grace: number;
}

function port(value: string): number {
  const n = nonNegativeInt(value);
  if (n > 65535) throw new InvalidArgumentError(`expected a port in 0..65535, got '${value}'`);
  return n;
}

export function registerEngine(program: Command): void {
  program
    .command('engine')
    .description('an emulated LLM replica behind an OpenAI-compatible HTTP server')
    .requiredOption('--port <p>', 'TCP port (0 picks a free one)', port)
    .option('--host <h>', 'address to listen on', '127.0.0.1')
    .option('--model <preset>', 'cost-model preset, also the served model name', DEFAULT_MODEL)
    .option('--kv-tokens <n>', "override the preset's KV capacity in tokens", positiveInt)
    .option(
      '--queue-policy <name>',
      'queue policy (fcfs, lpm, priority-groups, larry, no-preempt)',
      DEFAULT_QUEUE_POLICY,
    )
    .option('--time-scale <x>', 'engine seconds per wall-clock second (>1 runs faster)', positiveNumber, 1)
    .option('--seed <s>', 'shifts the generated text', nonNegativeInt, 0)
    .option('--body-limit <bytes>', 'largest request body', positiveInt, 4 * 1024 * 1024)
    .option('--grace <s>', 'seconds in-flight requests get to finish on SIGTERM', positiveNumber, 5)
    .action((flags: EngineFlags) => runEngine(flags));
}

async function runEngine(flags: EngineFlags): Promise<void> {
  const server = createEngineServer({
    model: flags.model,
    kvTokens: flags.kvTokens,
    queuePolicy: flags.queuePolicy,
    timeScale: flags.timeScale,
    seed: flags.seed,
    bodyLimit: flags.bodyLimit,
  });
  const { url } = await server.listen(flags.port, flags.host);
  process.stdout.write(`listening on ${url}\n`);
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      process.stderr.write(`preble engine: ${signal}, shutting down\n`);
      server.close(flags.grace * 1000).then(resolve, resolve);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
