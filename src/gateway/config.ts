import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { costModelPreset, presetNames } from '../core/cost-model/presets.ts';
import { checkPolicyOptions, isDisaggregatedPolicyName } from '../core/policies/registry.ts';
import { firstIssue } from '../util/zod-issue.ts';
import { adviceSchema } from './advice/config.ts';

/** The request shapes and metric names of the engines the gateway can stand in front of. */
export const dialectNames = ['preble', 'vllm', 'sglang', 'llamacpp'] as const;
export type DialectName = (typeof dialectNames)[number];

/** What a replica does in the fleet: whole requests, or one leg of a disaggregated one (see docs/gateway.md). */
export const replicaRoles = ['mixed', 'prefill', 'decode'] as const;
export type ReplicaRole = (typeof replicaRoles)[number];

const seconds = z.number().positive();
const count = z.number().int().nonnegative();
const positiveCount = z.number().int().positive();
const secret = z.string().min(16, 'must be at least 16 characters');

/** A cost-model preset's name, checked (the roofline list is long: the message gives its form). */
const costModelName = z
  .string()
  .min(1)
  .refine(
    (name) => {
      try {
        costModelPreset(name);
        return true;
      } catch {
        return false;
      }
    },
    {
      error: `unknown cost-model preset (e.g. ${presetNames()
        .filter((n) => !n.startsWith('roofline:'))
        .join(', ')}, or roofline:<model>@<gpu>[x<GPUs>] such as roofline:llama3-8b@h100)`,
    },
  );

/** One replica entry: also the body of the admin API's POST /admin/replicas. */
export const replicaSchema = z
  .object({
    url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
    dialect: z.enum(dialectNames).default('preble'),
    /** mixed (default): whole requests; prefill / decode: one leg of a disaggregated request. */
    role: z.enum(replicaRoles).default('mixed'),
    /** KV capacity in tokens, when it differs from the cost model's. */
    kvTokens: positiveCount.optional(),
    /**
     * Its hardware's cost-model preset, when it differs from the top-level `costModel` (a fleet of
     * mixed GPUs): policies that price time (e2-plus) price it with this one; its KV capacity too.
     */
    costModel: costModelName.optional(),
    /** The model it serves; absent: the top-level `model`, else its own /v1/models says. */
    model: z.string().min(1).optional(),
    /** Its KV-cache event endpoint (vLLM's ZMQ PUB format), e.g. tcp://10.0.0.6:5557; absent: none. */
    kvEvents: z
      .string()
      .regex(/^(tcp|ipc|inproc):\/\/.+/, 'must be a ZMQ endpoint such as tcp://host:port')
      .optional(),
  })
  .strict();

const apiKey = z
  .object({
    name: z.string().min(1),
    /** The key itself, or the environment variable holding it (keeps secrets out of files). */
    key: secret.optional(),
    keyEnv: z.string().min(1).optional(),
    /** Sustained requests per second this key may send; absent: no limit. */
    ratePerSecond: seconds.optional(),
    /** Requests at once above the rate (default: one second's worth, at least 1). */
    burst: z.number().min(1).optional(),
  })
  .strict()
  .refine((k) => (k.key === undefined) !== (k.keyEnv === undefined), 'give exactly one of key, keyEnv');

/** Everything `preble serve` can be told, from a YAML file and flags; defaults are the safe choice. */
export const gatewayConfigSchema = z
  .object({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.number().int().min(0).max(65535),
    policy: z.string().min(1).default('e2'),
    /** The policy's options over its defaults (`preble sim --help` lists each policy's). */
    policyOptions: z.record(z.string(), z.union([z.number(), z.boolean(), z.string()])).default({}),
    costModel: costModelName.default('mistral-7b-a6000'),
    kvTokens: positiveCount.optional(),
    /** The model every replica without its own `model` serves; absent: each replica's /v1/models says. */
    model: z.string().min(1).optional(),
    seed: count.default(0),
    /** `chars`, `backend` (the replicas' /tokenize) or `hf:PATH` (a local tokenizer.json). */
    tokenizer: z.string().min(1).default('chars'),
    /**
     * `hf:PATH`: threads encoding long prompts off the event loop (0: none); absent: one per spare
     * core, 1 to 4.
     */
    tokenizerThreads: count.optional(),
    pollSeconds: z.number().nonnegative().default(0.5),
    tickSeconds: seconds.default(1),
    timeScale: seconds.default(1),
    // A bare URL is short for `{url}`; either way the errors name `replicas.N.url`.
    replicas: z
      .array(z.preprocess((v) => (typeof v === 'string' ? { url: v } : v), replicaSchema))
      .default([]),
    limits: z
      .object({
        bodyBytes: positiveCount.default(4 * 1024 * 1024),
        maxTokens: positiveCount.default(32_768),
        /** Longest prompt in tokens (as the gateway's tokenizer counts them). */
        promptTokens: positiveCount.default(1_000_000),
        /** Requests forwarded at once; absent: no limit. */
        maxConcurrent: positiveCount.optional(),
        maxQueue: count.default(1024),
        queueTimeoutSeconds: seconds.default(30),
      })
      .strict()
      .prefault({}),
    timeouts: z
      .object({
        connectSeconds: seconds.default(5),
        /** Streams: until the first event; non-streaming answers: until the whole answer. */
        firstTokenSeconds: seconds.default(120),
        /** Longest silence inside a streamed answer. */
        idleSeconds: seconds.default(60),
        requestSeconds: seconds.default(600),
        /** Prefill/decode disaggregation: the whole prefill leg (its one-token answer). */
        prefillSeconds: seconds.default(120),
      })
      .strict()
      .prefault({}),
    retries: z
      .object({
        /** Further attempts on other replicas while nothing has reached the client. */
        attempts: count.default(2),
        backoffSeconds: z.number().nonnegative().default(0.05),
      })
      .strict()
      .prefault({}),
    health: z
      .object({
        intervalSeconds: seconds.default(2),
        timeoutSeconds: seconds.default(1),
        /** Consecutive failed checks that take a replica out. */
        unhealthyAfter: positiveCount.default(2),
      })
      .strict()
      .prefault({}),
    breaker: z
      .object({ failureThreshold: positiveCount.default(3), openSeconds: seconds.default(5) })
      .strict()
      .prefault({}),
    auth: z
      .object({
        keys: z.array(apiKey).default([]),
        /** The admin API is off unless one of these is set. */
        adminKey: secret.optional(),
        adminKeyEnv: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    shutdown: z
      .object({ drainSeconds: z.number().nonnegative().default(30) })
      .strict()
      .prefault({}),
    logLevel: z.enum(['silent', 'error', 'warn', 'info', 'debug']).default('warn'),
    /** Log prompts and completions (debug only: they may hold personal data). */
    logBodies: z.boolean().default(false),
    /** Live advice: the fleet the planner recommends for the traffic seen (advice/config.ts); absent: off. */
    advice: adviceSchema.optional(),
  })
  .strict()
  .superRefine((config, ctx) => {
    // The registry checks names (renamed ones get a hint) and types against the policy's defaults.
    try {
      checkPolicyOptions(config.policy, config.policyOptions);
    } catch (error) {
      const path = /option '([^']+)'/.exec((error as Error).message)?.[1];
      ctx.addIssue({
        code: 'custom',
        path: path === undefined ? ['policy'] : ['policyOptions', path],
        message: (error as Error).message,
      });
    }
    const problem = rolesProblem(
      isDisaggregatedPolicyName(config.policy),
      config.policy,
      config.replicas.map((r) => r.role),
    );
    if (problem !== undefined) ctx.addIssue({ code: 'custom', path: ['replicas'], message: problem });
  });

/**
 * Why a fleet of these roles cannot run under the policy, in one line; undefined when it can. A
 * disaggregated policy needs prefill and decode replicas; a colocated one runs whole requests, so
 * it takes mixed replicas only. Empty fleets are left to the caller (replicas may come later).
 */
export function rolesProblem(
  disaggregated: boolean,
  policy: string,
  roles: readonly ReplicaRole[],
): string | undefined {
  if (roles.length === 0) return undefined;
  const split = roles.filter((r) => r !== 'mixed').length;
  if (!disaggregated && split > 0)
    return `policy '${policy}' runs whole requests on mixed replicas; ${split} replica(s) have role prefill or decode (use a disaggregated policy such as distserve, or role: mixed)`;
  if (disaggregated && (!roles.includes('prefill') || !roles.includes('decode')))
    return `policy '${policy}' is disaggregated and needs at least one prefill and one decode replica (--prefill URL, --decode URL, or role: in the config)`;
  return undefined;
}

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
export type ReplicaConfig = z.infer<typeof replicaSchema>;

/** Validate a raw config object; an error is one line naming the field. */
export function parseGatewayConfig(raw: unknown, source = 'config'): GatewayConfig {
  const result = gatewayConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  const { param, issue } = firstIssue(result.error);
  throw new Error(`${source}: ${param ?? '(top level)'}: ${issue.message}`);
}

/** Read a YAML (or JSON) config file into a raw object, with one-line errors. */
export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read config ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    const first = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    throw new Error(`${path}: not valid YAML: ${first}`);
  }
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== 'object' || Array.isArray(raw))
    throw new Error(`${path}: expected a mapping at the top`);
  return raw as Record<string, unknown>;
}

/** Replica entries in their full form. */
export function normalizeReplicas(config: GatewayConfig): {
  url: string;
  dialect: DialectName;
  role: ReplicaRole;
  kvTokens?: number;
  costModel?: string;
  model?: string;
  kvEvents?: string;
}[] {
  return config.replicas.map((r) => ({
    url: r.url,
    dialect: r.dialect,
    role: r.role,
    ...(r.kvTokens === undefined ? {} : { kvTokens: r.kvTokens }),
    ...(r.costModel === undefined ? {} : { costModel: r.costModel }),
    ...(r.model === undefined ? {} : { model: r.model }),
    ...(r.kvEvents === undefined ? {} : { kvEvents: r.kvEvents }),
  }));
}

/** Resolve a secret given inline or through an environment variable. */
export function resolveSecret(
  value: string | undefined,
  envName: string | undefined,
  field: string,
  env: NodeJS.ProcessEnv,
): string | undefined {
  if (value !== undefined) return value;
  if (envName === undefined) return undefined;
  const fromEnv = env[envName];
  if (fromEnv === undefined || fromEnv.length < 16)
    throw new Error(
      `config: ${field}: environment variable ${envName} is unset or shorter than 16 characters`,
    );
  return fromEnv;
}
