import type { Tokens } from '../core/types.ts';

/** One request of a workload: what arrives at the cluster. */
export interface WorkloadRequest {
  readonly id: string;
  /** Arrival time in seconds from the start of the stream. */
  readonly arrival: number;
  readonly tokens: Tokens;
  /**
   * How many tokens the engine will generate (known to the workload, hidden from policies): the true
   * output length, an oracle no scheduler may read. At most `maxTokens` when that is given.
   */
  readonly outputTokens: number;
  /**
   * The client's `max_tokens`: the most tokens it lets the engine generate, and all that schedulers
   * know about the output in advance (a non-preempting engine reserves it). Absent: the engine's
   * default applies (no-preempt's `defaultMaxOutputTokens`, capped by the context).
   */
  readonly maxTokens?: number;
  /** Requests of one conversation / agent chain / problem share a session id. */
  readonly sessionId?: string;
  /** Which generator (or trace) produced it, for mixed workloads and reports. */
  readonly workload: string;
}

/** Options every generator takes. */
export interface WorkloadOptions {
  /** How many requests to produce. */
  readonly requests: number;
  /** Poisson arrival rate (requests per second). */
  readonly rps: number;
  readonly seed: number;
  /**
   * The cluster the stream is sized for: its data-parallel instances (engines, each with its own KV
   * cache). The paper's generators size their working sets (tools, agent environments, videos,
   * documents, problems) per 2 GPUs and scale them with the GPU count (`scale_to_gpu`); ours scale
   * per instance. Default 2, the authors' unit. A generator given its working set explicitly
   * (`tools`, `activeChains`, ...) ignores it.
   */
  readonly instances?: number;
}

/**
 * A workload generator: pure and seeded. It yields requests lazily in arrival order, so that a
 * million-request stream never has to exist in memory at once.
 */
export type WorkloadGenerator<O extends WorkloadOptions = WorkloadOptions> = (
  options: O,
) => Iterable<WorkloadRequest>;
