import { type BaseWorkloadOptions, baseWorkloads } from './base-workloads.ts';
import { type MixedOptions, mixed } from './mixed.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

/** Options any workload accepts: the common ones plus each generator's own (ignored by the others). */
export type AnyWorkloadOptions = WorkloadOptions &
  Partial<Omit<BaseWorkloadOptions, keyof WorkloadOptions>> &
  Partial<Omit<MixedOptions, keyof WorkloadOptions>>;

interface WorkloadEntry {
  /** One line for `--help`: what the requests share and the paper's Table 1 row it matches. */
  readonly summary: string;
  readonly create: (options: AnyWorkloadOptions) => Iterable<WorkloadRequest>;
}

/** The built-in generators, by name (traces are `azure:FILE` / `mooncake:FILE`, see traces/registry.ts). */
const WORKLOADS = {
  toolbench: {
    summary: 'tool-use prompts: a tool demonstration shared by every call of that tool (Table 1: Toolbench)',
    create: (o) => baseWorkloads.toolbench(o),
  },
  'embodied-agent': {
    summary: "agent steps: each environment's history grows step by step (Table 1: embodied agent)",
    create: (o) => baseWorkloads['embodied-agent'](o),
  },
  programming: {
    summary: 'code generation: one demonstration, many samples per problem (Table 1: programming)',
    create: (o) => baseWorkloads.programming(o),
  },
  'video-qa': {
    summary: 'questions over long video transcripts, several per video (Table 1: video QA)',
    create: (o) => baseWorkloads['video-qa'](o),
  },
  loogle: {
    summary: 'questions over long documents, several per document (Table 1: LooGLE)',
    create: (o) => baseWorkloads.loogle(o),
  },
  mixed: {
    summary: 'the five workloads interleaved (the paper: mixed workload)',
    create: (o) => mixed(o),
  },
} as const satisfies Record<string, WorkloadEntry>;

export type WorkloadName = keyof typeof WORKLOADS;
export const workloadNames = Object.keys(WORKLOADS) as WorkloadName[];

export function isWorkloadName(name: string): name is WorkloadName {
  return Object.hasOwn(WORKLOADS, name);
}

/** The named workload's request stream; throws listing the valid names for an unknown one. */
export function createWorkload(name: string, options: AnyWorkloadOptions): Iterable<WorkloadRequest> {
  if (!isWorkloadName(name)) {
    throw new Error(`unknown workload '${name}'; valid workloads: ${workloadNames.join(', ')}`);
  }
  return (WORKLOADS[name] as WorkloadEntry).create(options);
}

/** One line per generator and trace form, for `--help`. */
export function describeWorkloads(): string[] {
  return [
    ...workloadNames.map((name) => `${name}: ${WORKLOADS[name].summary}`),
    'azure:FILE: an Azure LLM inference trace CSV (arrivals and lengths, no sharing)',
    'mooncake:FILE: a Mooncake-format JSONL trace (arrivals, lengths, 512-token block hashes)',
  ];
}
