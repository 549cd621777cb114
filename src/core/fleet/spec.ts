/**
 * Instance specs and fleet configurations: the zod schema, the defaults and one-line errors naming the
 * field. A fleet file (src/cli/fleet-file.ts) and the `--fleet 2P1D` shorthand (shorthand.ts) both end
 * here; fleet.ts turns a configuration into numbered instances.
 */
import { z } from 'zod';
import { queuePolicyNames } from '../replica-queue/registry.ts';
import type { Role } from '../types.ts';
import { withDefaults } from '../with-defaults.ts';
import { type LinkClass, linkClassNames, type TransferMode, transferModeNames } from './kv-link.ts';

export const roleNames = ['mixed', 'prefill', 'decode'] as const satisfies readonly Role[];

/** A fleet spec problem: the field it names (dotted path, '' for the whole) and why, as one line. */
export class FleetSpecError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(field === '' ? reason : `${field}: ${reason}`);
    this.name = 'FleetSpecError';
  }
}

const positiveInt = z.number().int().positive();

/** One instance spec as written (every field but `model` has a default; `model` may come from the run). */
export const instanceSpecSchema = z
  .object({
    role: z.enum(roleNames).optional(),
    /**
     * A cost-model preset (`mistral-7b-a6000`, `llama3-70b-h100`, ...), a roofline name
     * (`roofline:llama3-8b@h100x2`), or a bare model shape (`llama3-8b`) with `gpu` (and `tensorParallel`).
     */
    model: z.string().min(1).optional(),
    /** The GPU (`a6000`, `a100`, `h100`, `h200`, ...): required with a bare model, checked against a preset. */
    gpu: z.string().min(1).optional(),
    /** GPUs one copy of the weights is split over (tensor parallel); default: the preset's, or 1. */
    tensorParallel: positiveInt.optional(),
    /** Pipeline stages; GPUs per instance = tensorParallel x pipelineParallel. */
    pipelineParallel: positiveInt.optional(),
    /** The engine's waiting-queue policy, or `auto` (the simulator's choice: lpm). */
    queuePolicy: z.enum(['auto', ...queuePolicyNames]).optional(),
    /** Chunked-prefill token budget per iteration; absent: the engine's default (512). */
    chunkTokens: positiveInt.optional(),
    /** Most requests running at once; absent: the engine's default (256). */
    maxRunning: positiveInt.optional(),
    /** US dollars per hour for the whole instance; absent: GPUs x the GPU's listed price, when it has one. */
    pricePerHour: z.number().nonnegative().optional(),
    /** How many identical instances this spec stands for. */
    count: positiveInt.optional(),
  })
  .strict();

export type InstanceSpecInput = z.infer<typeof instanceSpecSchema>;

/** The defaults of an instance spec (the fields that have one without looking at the model). */
export const INSTANCE_SPEC_DEFAULTS = {
  role: 'mixed' as Role,
  pipelineParallel: 1,
  queuePolicy: 'auto' as InstanceSpec['queuePolicy'],
  count: 1,
};

/** An instance spec with its defaults applied. */
export interface InstanceSpec {
  readonly role: Role;
  readonly model: string;
  readonly gpu?: string;
  readonly tensorParallel?: number;
  readonly pipelineParallel: number;
  readonly queuePolicy: 'auto' | (typeof queuePolicyNames)[number];
  readonly chunkTokens?: number;
  readonly maxRunning?: number;
  readonly pricePerHour?: number;
  readonly count: number;
}

const linkOverrideSchema = z
  .object({ bandwidth: z.number().positive().optional(), latency: z.number().nonnegative().optional() })
  .strict();

/** A fleet as written: instance specs and how its instances are joined. */
export const fleetConfigSchema = z
  .object({
    instances: z.array(instanceSpecSchema).min(1, 'expected at least one instance spec'),
    /** The link between nodes. */
    network: z.enum(linkClassNames).optional(),
    /** The link between instances on one node. */
    nodeLink: z.enum(linkClassNames).optional(),
    /** Instances fill nodes of this many GPUs, in order. */
    gpusPerNode: positiveInt.optional(),
    transferMode: z.enum(transferModeNames).optional(),
    /** Per link class: bandwidth (bytes/s) and latency (s) over the class's figures. */
    links: z.partialRecord(z.enum(linkClassNames), linkOverrideSchema).optional(),
  })
  .strict();

export const FLEET_DEFAULTS = {
  network: 'infiniband-200' as LinkClass,
  nodeLink: 'nvlink' as LinkClass,
  gpusPerNode: 8,
  transferMode: 'serialized' as TransferMode,
};

export interface LinkOverride {
  readonly bandwidth?: number;
  readonly latency?: number;
}

export interface FleetConfig {
  readonly instances: readonly InstanceSpec[];
  readonly network: LinkClass;
  readonly nodeLink: LinkClass;
  readonly gpusPerNode: number;
  readonly transferMode: TransferMode;
  readonly links: Readonly<Partial<Record<LinkClass, LinkOverride>>>;
}

/** The first problem zod found, as the field it names and one line. */
export function fleetIssue(error: z.ZodError): FleetSpecError {
  const issue = error.issues[0]!;
  const path = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const valid = path.length === 0 ? Object.keys(fleetConfigSchema.shape) : fieldsOf(path);
    return new FleetSpecError(
      [...path, issue.keys[0]!].join('.'),
      `unknown field${valid.length === 0 ? '' : ` (valid: ${valid.join(', ')})`}`,
    );
  }
  if (path.length === 0 && issue.code === 'invalid_type')
    return new FleetSpecError('', 'expected a mapping with `instances`, or a list of instance specs');
  return new FleetSpecError(path.join('.'), issue.message);
}

function fieldsOf(path: readonly string[]): string[] {
  if (path[0] === 'instances') return Object.keys(instanceSpecSchema.shape);
  if (path[0] === 'links')
    return path.length === 1 ? [...linkClassNames] : Object.keys(linkOverrideSchema.shape);
  return [];
}

export interface FleetParseOptions {
  /** The run's model (`--model`), for specs that name none. */
  readonly defaultModel?: string;
}

/** An instance spec's defaults applied; `model` from the run when the spec names none. */
export function applySpecDefaults(
  input: InstanceSpecInput,
  field: string,
  defaultModel?: string,
): InstanceSpec {
  const model = input.model ?? defaultModel;
  if (model === undefined) throw new FleetSpecError(`${field}.model`, 'required (the run names no model)');
  return { ...input, ...withDefaults(INSTANCE_SPEC_DEFAULTS, input), model };
}

/**
 * A fleet configuration from a parsed file's value: a mapping with `instances`, or just the list of
 * instance specs. Throws FleetSpecError naming the first bad field (`instances.1.tensorParallel`).
 */
export function parseFleetConfig(raw: unknown, options: FleetParseOptions = {}): FleetConfig {
  const value = Array.isArray(raw) ? { instances: raw } : raw;
  const result = fleetConfigSchema.safeParse(value);
  if (!result.success) throw fleetIssue(result.error);
  const { instances, links, ...rest } = result.data;
  return {
    ...withDefaults(FLEET_DEFAULTS, rest),
    instances: instances.map((spec, i) => applySpecDefaults(spec, `instances.${i}`, options.defaultModel)),
    links: links ?? {},
  };
}
