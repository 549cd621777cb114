import { type Command, InvalidArgumentError } from 'commander';
import { isLinkClass, linkClassNames } from '../core/fleet/kv-link.ts';
import {
  DEFAULT_BODY_LIMIT,
  DEFAULT_MODEL,
  DEFAULT_QUEUE_POLICY,
  FAIL_STATUS_RANGE,
  HEALTH_STATUS_RANGE,
} from '../emulator/defaults.ts';
import { nonNegativeInt, nonNegativeNumber, positiveInt, positiveNumber } from './parse.ts';
import { addRegistryHelp } from './registry-help.ts';

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
  failRate: number;
  failStatus: number;
  hang?: boolean;
  firstByteDelay: number;
  stallAfter?: number;
  healthStatus: number;
  faultAdmin?: boolean;
  kvEvents?: string;
  kvBlockSize: number;
  role: string;
  kvLink: string;
  kvHoldSeconds: number;
}

function port(value: string): number {
  const n = nonNegativeInt(value);
  if (n > 65535) throw new InvalidArgumentError(`expected a port in 0..65535, got '${value}'`);
  return n;
}

function probability(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !(n >= 0 && n <= 1))
    throw new InvalidArgumentError(`expected a probability in 0..1, got '${value}'`);
  return n;
}

function statusIn([min, max]: readonly [number, number]): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`expected an HTTP status in ${min}..${max}, got '${value}'`);
    return n;
  };
}

export function registerEngine(program: Command): void {
  const command = program
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
    .option(
      '--kv-events <endpoint>',
      'publish KV-cache events as vLLM does (ZMQ PUB, msgpack) on this endpoint, e.g. tcp://127.0.0.1:5557 (port 0: a free one, printed on stderr)',
    )
    .option('--kv-block-size <n>', 'tokens per block in the KV events', positiveInt, 16)
    .option(
      '--role <role>',
      'mixed (whole requests), prefill (runs prompts, holds their KV for a decode engine) or decode (pulls the KV named by kv_transfer_params and generates)',
      'mixed',
    )
    .option(
      '--kv-link <class>',
      `decode role: the link the KV crosses, for its transfer time (${linkClassNames.join(', ')})`,
      'emulated',
    )
    .option(
      '--kv-hold-seconds <s>',
      'prefill role: seconds a KV nobody pulls is held before it is freed',
      positiveNumber,
      60,
    )
    .option('--seed <s>', 'shifts the generated text and seeds --fail-rate', nonNegativeInt, 0)
    .option('--body-limit <bytes>', 'largest request body', positiveInt, DEFAULT_BODY_LIMIT)
    .option('--grace <s>', 'seconds in-flight requests get to finish on SIGTERM', positiveNumber, 5)
    // Fault injection, for reliability tests of a gateway in front of this replica. All off by default.
    .option(
      '--fail-rate <p>',
      'fault: answer each generation request with --fail-status with probability p (seeded by --seed)',
      probability,
      0,
    )
    .option(
      '--fail-status <code>',
      'fault: the HTTP status --fail-rate answers with (400..599)',
      statusIn(FAIL_STATUS_RANGE),
      500,
    )
    .option('--hang', 'fault: accept generation requests and never answer them (until the client gives up)')
    .option(
      '--first-byte-delay <s>',
      'fault: wall-clock seconds before a generation request is handled (slow first byte)',
      nonNegativeNumber,
      0,
    )
    .option(
      '--stall-after <n>',
      'fault: a stream goes idle, still open, after n content chunks',
      nonNegativeInt,
    )
    .option(
      '--health-status <code>',
      'fault: the HTTP status /health answers with (200..599)',
      statusIn(HEALTH_STATUS_RANGE),
      200,
    )
    .option('--fault-admin', 'serve POST /_preble/faults to change the faults at run time (tests only)')
    .action((flags: EngineFlags) => runEngine(flags));
  addRegistryHelp(command, ['queuePolicies', 'presets']);
}

async function runEngine(flags: EngineFlags): Promise<void> {
  if (flags.role !== 'mixed' && flags.role !== 'prefill' && flags.role !== 'decode')
    throw new InvalidArgumentError(`--role: expected mixed, prefill or decode, got '${flags.role}'`);
  if (!isLinkClass(flags.kvLink))
    throw new InvalidArgumentError(
      `--kv-link: expected one of ${linkClassNames.join(', ')}, got '${flags.kvLink}'`,
    );
  const { createEngineServer } = await import('../emulator/server.ts'); // here, not above: --help stays quick
  const server = createEngineServer({
    model: flags.model,
    kvTokens: flags.kvTokens,
    queuePolicy: flags.queuePolicy,
    timeScale: flags.timeScale,
    seed: flags.seed,
    bodyLimit: flags.bodyLimit,
    faults: {
      failRate: flags.failRate,
      failStatus: flags.failStatus,
      hang: flags.hang === true,
      firstByteDelay: flags.firstByteDelay,
      stallAfter: flags.stallAfter ?? null,
      healthStatus: flags.healthStatus,
    },
    faultAdmin: flags.faultAdmin === true,
    role: flags.role,
    kvLink: flags.kvLink,
    kvHoldSeconds: flags.kvHoldSeconds,
    ...(flags.kvEvents === undefined ? {} : { kvEvents: flags.kvEvents, kvBlockSize: flags.kvBlockSize }),
  });
  const { url } = await server.listen(flags.port, flags.host);
  if (server.kvEvents !== undefined)
    process.stderr.write(`preble engine: KV events on ${server.kvEvents.endpoint}\n`);
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
