import { type BaseWorkloadOptions, baseWorkloads } from './base-workloads.ts';
import { distServeApplications, distServeWorkload } from './distserve.ts';
import { LENGTH_DIST_FORMS } from './length-dist.ts';
import { type MixedOptions, mixed } from './mixed.ts';
import { isSyntheticForm, SYNTHETIC_FORM, synthetic } from './synthetic.ts';
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
  'sharegpt-like': {
    summary: distServeApplications['sharegpt-like'].summary,
    create: (o) => distServeWorkload('sharegpt-like', o),
  },
  'humaneval-like': {
    summary: distServeApplications['humaneval-like'].summary,
    create: (o) => distServeWorkload('humaneval-like', o),
  },
  'longbench-like': {
    summary: distServeApplications['longbench-like'].summary,
    create: (o) => distServeWorkload('longbench-like', o),
  },
} as const satisfies Record<string, WorkloadEntry>;

export type WorkloadName = keyof typeof WORKLOADS;
export const workloadNames = Object.keys(WORKLOADS) as WorkloadName[];

export function isWorkloadName(name: string): name is WorkloadName {
  return Object.hasOwn(WORKLOADS, name);
}

/**
 * The named workload's request stream, or a `synthetic:in=LENGTH,out=LENGTH` form's; throws listing
 * the valid names for an unknown one, and a one-line error naming the bad part of a synthetic form.
 */
export function createWorkload(name: string, options: AnyWorkloadOptions): Iterable<WorkloadRequest> {
  if (isSyntheticForm(name)) return synthetic(name, options);
  if (!isWorkloadName(name)) {
    throw new Error(
      `unknown workload '${name}'; valid workloads: ${workloadNames.join(', ')}, ${SYNTHETIC_FORM}`,
    );
  }
  return (WORKLOADS[name] as WorkloadEntry).create(options);
}

/** One line per generator and trace form, for `--help`. */
export function describeWorkloads(): string[] {
  return [
    ...workloadNames.map((name) => `${name}: ${WORKLOADS[name].summary}`),
    `${SYNTHETIC_FORM}: independent requests, Poisson at --rps, no sharing; LENGTH is one of`,
    `  ${LENGTH_DIST_FORMS}`,
    '  (args positional or named; min=/max= clamp, default min 1), e.g. synthetic:in=512,out=64 or',
    "  'synthetic:in=uniform(128,2048),out=lognormal(mean=256,sd=200,max=2048)'",
    "azure:FILE: an Azure LLM inference trace CSV (arrivals and lengths, no sharing); Splitwise's code and conversation traces",
    'mooncake:FILE: a Mooncake-format JSONL trace (arrivals, lengths, 512-token block hashes)',
  ];
}
