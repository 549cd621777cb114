import { type BaseWorkloadOptions, baseWorkloads } from './base-workloads.ts';
import { type ConversationOptions, conversation } from './conversation.ts';
import { distServeApplications, distServeWorkload } from './distserve.ts';
import { LENGTH_DIST_FORMS } from './length-dist.ts';
import { type MixedOptions, mixed } from './mixed.ts';
import { isSyntheticForm, SYNTHETIC_FORM, synthetic } from './synthetic.ts';
import type { WorkloadOptions, WorkloadRequest } from './types.ts';

/** Options any workload accepts: the common ones plus each generator's own (ignored by the others). */
export type AnyWorkloadOptions = WorkloadOptions &
  Partial<Omit<BaseWorkloadOptions, keyof WorkloadOptions>> &
  Partial<Omit<MixedOptions, keyof WorkloadOptions>> &
  Partial<Omit<ConversationOptions, keyof WorkloadOptions>>;

interface WorkloadEntry {
  /** One line for `--help`: what the requests share and the paper's Table 1 row it matches. */
  readonly summary: string;
  readonly create: (options: AnyWorkloadOptions) => Iterable<WorkloadRequest>;
}

/** The built-in generators, by name (traces are `azure:FILE` / `mooncake:FILE` / `bailian:FILE`, see traces/registry.ts). */
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
  conversation: {
    summary:
      "multi-turn chat: each turn's prompt extends the last one's and its answer, after an application's system prompt (LMSYS-Chat-1M means)",
    create: (o) => conversation(o),
  },
} as const satisfies Record<string, WorkloadEntry>;

export type WorkloadName = keyof typeof WORKLOADS;
export const workloadNames = Object.keys(WORKLOADS) as WorkloadName[];

export function isWorkloadName(name: string): name is WorkloadName {
  return Object.hasOwn(WORKLOADS, name);
}

type OptionValue = (value: string, key: string) => Partial<AnyWorkloadOptions>;

const positiveInteger = (value: string, key: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`workload option ${key}: expected a positive integer, got '${value}'`);
  return n;
};
const oneOf =
  <T extends string>(values: readonly T[]) =>
  (value: string, key: string): T => {
    if (!(values as readonly string[]).includes(value))
      throw new Error(`workload option ${key}: expected one of ${values.join(', ')}, got '${value}'`);
    return value as T;
  };

/** `popularity=uniform|zipf` and `zipf=K` (which implies popularity=zipf): toolbench's tools, conversation's applications. */
const POPULARITY_OPTIONS: Readonly<Record<string, OptionValue>> = {
  popularity: (v, k) => ({ popularity: oneOf(['uniform', 'zipf'] as const)(v, k) }),
  zipf: (v, k) => {
    const exponent = Number(v);
    if (!(exponent > 0)) throw new Error(`workload option ${k}: expected a positive exponent, got '${v}'`);
    return { popularity: 'zipf', zipfExponent: exponent };
  },
};

/**
 * `NAME:KEY=VALUE,...` options per generator (`toolbench:zipf=1.1`, `programming:order=bursts`): each
 * sets the generator's own option of the same meaning (see its options interface and docs/design.md).
 */
const WORKLOAD_OPTIONS: Partial<Record<WorkloadName, Readonly<Record<string, OptionValue>>>> = {
  toolbench: {
    tools: (v, k) => ({ tools: positiveInteger(v, k) }),
    ...POPULARITY_OPTIONS,
  },
  'embodied-agent': { chains: (v, k) => ({ activeChains: positiveInteger(v, k) }) },
  programming: {
    order: (v, k) => ({ order: oneOf(['shuffled', 'bursts'] as const)(v, k) }),
    problems: (v, k) => ({ problems: positiveInteger(v, k) }),
    samples: (v, k) => ({ samplesPerProblem: positiveInteger(v, k) }),
    demo: (v, k) => ({ demonstrationTokens: positiveInteger(v, k) }),
    maxOutput: (v, k) => ({ maxOutputTokens: positiveInteger(v, k) }),
  },
  'video-qa': { videos: (v, k) => ({ activeVideos: positiveInteger(v, k) }) },
  loogle: { documents: (v, k) => ({ activeDocuments: positiveInteger(v, k) }) },
  conversation: {
    sessions: (v, k) => ({ activeSessions: positiveInteger(v, k) }),
    turns: (v, k) => {
      const mean = Number(v);
      if (!(mean >= 1) || !Number.isFinite(mean))
        throw new Error(`workload option ${k}: expected a mean of at least 1, got '${v}'`);
      return { meanTurns: mean };
    },
    systemPrompts: (v, k) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0)
        throw new Error(`workload option ${k}: expected a non-negative integer, got '${v}'`);
      return { systemPrompts: n };
    },
    systemTokens: (v, k) => ({ systemPromptTokens: positiveInteger(v, k) }),
    ...POPULARITY_OPTIONS,
    maxContext: (v, k) => ({ maxContextTokens: positiveInteger(v, k) }),
  },
};

/** A generator's name and the options of its `NAME:KEY=VALUE,...` form; undefined if `spec` names none. */
export function parseGeneratorSpec(
  spec: string,
): { readonly name: WorkloadName; readonly options: Partial<AnyWorkloadOptions> } | undefined {
  const colon = spec.indexOf(':');
  const name = colon === -1 ? spec : spec.slice(0, colon);
  if (!isWorkloadName(name)) return undefined;
  if (colon === -1) return { name, options: {} };
  const known = WORKLOAD_OPTIONS[name] ?? {};
  let options: Partial<AnyWorkloadOptions> = {};
  for (const part of spec.slice(colon + 1).split(',')) {
    const eq = part.indexOf('=');
    const key = eq === -1 ? part : part.slice(0, eq);
    const parse = Object.hasOwn(known, key) ? known[key] : undefined;
    if (eq === -1 || parse === undefined) {
      const keys = Object.keys(known);
      throw new Error(
        `workload '${spec}': '${part}' is not KEY=VALUE with a known key; ${name} takes ${keys.length === 0 ? 'no options' : keys.join(', ')}`,
      );
    }
    options = { ...options, ...parse(part.slice(eq + 1), key) };
  }
  return { name, options };
}

/**
 * The named workload's request stream (`NAME` or `NAME:KEY=VALUE,...`), or a
 * `synthetic:in=LENGTH,out=LENGTH` form's; throws listing the valid names for an unknown one, and a
 * one-line error naming the bad part of a synthetic form or an option. Options in the name override
 * the same options in `options`.
 */
export function createWorkload(name: string, options: AnyWorkloadOptions): Iterable<WorkloadRequest> {
  if (isSyntheticForm(name)) return synthetic(name, options);
  const generator = parseGeneratorSpec(name);
  if (generator === undefined) {
    throw new Error(
      `unknown workload '${name}'; valid workloads: ${workloadNames.join(', ')}, ${SYNTHETIC_FORM}`,
    );
  }
  return (WORKLOADS[generator.name] as WorkloadEntry).create({ ...options, ...generator.options });
}

/** One line per generator and trace form, for `--help`. */
export function describeWorkloads(): string[] {
  return [
    ...workloadNames.map((name) => `${name}: ${WORKLOADS[name].summary}`),
    'NAME:KEY=VALUE,...: a generator with options, e.g. toolbench:zipf=1.1,tools=300 or',
    '  programming:order=bursts; keys: toolbench tools, popularity, zipf; embodied-agent chains;',
    '  programming order, problems, samples, demo, maxOutput; video-qa videos; loogle documents;',
    '  conversation sessions, turns, systemPrompts, systemTokens, popularity, zipf, maxContext',
    '  (working sets otherwise scale with --instances as the authors did: docs/design.md, "Workloads")',
    `${SYNTHETIC_FORM}: independent requests, Poisson at --rps, no sharing; LENGTH is one of`,
    `  ${LENGTH_DIST_FORMS}`,
    '  (args positional or named; min=/max= clamp, default min 1), e.g. synthetic:in=512,out=64 or',
    "  'synthetic:in=uniform(128,2048),out=lognormal(mean=256,sd=200,max=2048)'",
    "azure:FILE: an Azure LLM inference trace CSV (arrivals and lengths, no sharing); Splitwise's code and conversation traces",
    'mooncake:FILE: a Mooncake-format JSONL trace (arrivals, lengths, 512-token block hashes)',
    "bailian:FILE: a Qwen-Bailian JSONL trace (Alibaba's: timestamps in seconds, 16-token block hashes)",
  ];
}
