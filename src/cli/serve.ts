import type { Command } from 'commander';
import { costModelPreset } from '../core/cost-model/presets.ts';
import { createGlobalPolicy } from '../core/policies/registry.ts';
import { createGateway } from '../gateway/server.ts';
import { nonNegativeInt, nonNegativeNumber, positiveInt } from './parse.ts';

interface ServeFlags {
  port: number;
  host: string;
  replica: string[];
  policy: string;
  costModel: string;
  kvTokens?: number;
  model?: string;
  seed: number;
  poll: number;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('OpenAI-compatible gateway that routes each request to a replica with a global policy')
    .requiredOption('--port <n>', 'port to listen on (0: any free port)', nonNegativeInt)
    .option('--host <h>', 'address to bind', '127.0.0.1')
    .requiredOption(
      '--replica <url>',
      'a replica base URL (repeat the flag for each)',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option('--policy <name>', 'global policy', 'e2')
    .option(
      '--cost-model <preset>',
      "cost-model preset of the replicas' hardware (for e2)",
      'mistral-7b-a6000',
    )
    .option('--kv-tokens <n>', "replicas' KV capacity in tokens (default: the preset's)", positiveInt)
    .option('--model <name>', 'the model name clients must ask for (default: any)')
    .option('--seed <s>', 'random seed', nonNegativeInt, 0)
    .option(
      '--poll <seconds>',
      "seconds between polls of the replicas' /metrics for load signals (0: off)",
      nonNegativeNumber,
      0.5,
    )
    .action((flags: ServeFlags) => serve(flags));
}

async function serve(flags: ServeFlags): Promise<void> {
  if (flags.replica.length === 0) throw new Error('--replica: give at least one replica URL');
  const costModel = costModelPreset(
    flags.costModel,
    flags.kvTokens === undefined ? {} : { kvCapacityTokens: flags.kvTokens },
  );
  const gateway = createGateway({
    policy: createGlobalPolicy(flags.policy, { costModel, seed: flags.seed }),
    replicas: flags.replica,
    replicaKvTokens: costModel.kvCapacityTokens,
    pollSeconds: flags.poll,
    ...(flags.model === undefined ? {} : { model: flags.model }),
  });
  const url = await gateway.listen(flags.port, flags.host);
  process.stdout.write(`listening on ${url}\n`);
  const stop = () => {
    gateway.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
