import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { watchParent } from '../util/child-group.ts';
import { registerBenchGateway } from './bench-gateway.ts';
import { registerBenchHttp } from './bench-http.ts';
import { registerBenchMemory } from './bench-memory.ts';
import { registerBenchPlan } from './bench-plan.ts';
import { registerBenchScheduler } from './bench-scheduler.ts';
import { registerBenchSim } from './bench-sim.ts';
import { registerBenchSoak } from './bench-soak.ts';
import { registerDemo } from './demo.ts';
import { registerEngine } from './engine.ts';
import { registerExperiment } from './experiment.ts';
import { registerPlan } from './plan.ts';
import { registerReplicas } from './replicas.ts';
import { registerServe } from './serve.ts';
import { registerSim } from './sim.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

function buildProgram(): Command {
  const program = new Command('preble')
    .description('Prefix-aware scheduling for LLM serving: the E2 scheduler, baselines, and their benchmarks')
    .version(version)
    .exitOverride()
    // Every error one line: commander's reason (with its "did you mean" hint folded in) and where to look.
    .configureOutput({
      outputError: (message, write) =>
        write(`${message.trim().replace(/\s*\n\s*/g, ' ')} (run with --help for usage)\n`),
    });
  const bench = program.command('bench').description('benchmarks').exitOverride();
  registerBenchScheduler(bench);
  registerBenchMemory(bench);
  registerBenchSim(bench);
  registerBenchHttp(bench);
  registerBenchGateway(bench);
  registerBenchSoak(bench);
  registerBenchPlan(bench);
  registerSim(program);
  registerExperiment(program);
  registerServe(program);
  registerEngine(program);
  registerDemo(program);
  registerReplicas(program);
  registerPlan(program);
  return program;
}

/** Run the CLI; errors become one line on stderr and a non-zero exit, never a stack trace. */
export async function main(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv as string[]);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode; // commander already printed the reason
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`preble: ${message}\n`);
    return 1;
  }
}

watchParent(); // a child of another preble process (or of npm) ends with its parent
process.exitCode = await main(process.argv);
