import { LPM_FCFS_ABOVE } from '../../replica-queue/lpm.ts';
import type { InstanceCost } from '../../types.ts';

/** Why e2-plus chose an instance: the cheapest holder of the request's cached prefix, or any other. */
export const E2_PLUS_BRANCHES = ['exploit', 'explore'] as const;
export type E2PlusBranch = (typeof E2_PLUS_BRANCHES)[number];

/** e2-plus's cost of one instance for one request (seconds). */
export interface E2PlusInstanceCost extends InstanceCost {
  /** Prefill queued on the instance ahead of this request (routed there, first token not yet out). */
  readonly queued: number;
  /** This request's own prefill of its miss on this instance. */
  readonly prefill: number;
  /** This request's decode at the instance's batch size, and what its decode adds to the others'. */
  readonly decode: number;
  /** What the request's prefill delays the instance's running requests by (their count, with those queued ahead, x P). */
  readonly interference: number;
  /** Recomputation that its predicted evictions would cost (E2's M). */
  readonly eviction: number;
  /** What its miss displaces where the cache churns: the share of evicted tokens wanted again x its prefill. */
  readonly displacement: number;
  /** What the request's own latency beyond the window's mean adds under `latencyPower` (0 at 1). */
  readonly tail: number;
}

export interface E2PlusOptions {
  /** History window (seconds): prefix popularity for the eviction cost, the output-length estimate, the arrival rate and the prefill share. */
  readonly windowSeconds: number;
  /**
   * The engines' queue order, for the prefill queued *ahead* of a request: 'lpm' (SGLang's default and
   * the simulator's): only queued requests with at least as many cached tokens go first, while at most
   * `lpmFcfsAbove` wait on the instance (a longer queue is not sorted); 'fcfs': all.
   */
  readonly queueOrder: 'lpm' | 'fcfs';
  /** The engines' lpm sorts a waiting queue only up to this length (SGLang: 128; lpm's `fcfsAbove`). */
  readonly lpmFcfsAbove: number;
  /** Requests the engine admitted and is prefilling count as ahead whatever their cached share (running prefills take the chunk budget first). */
  readonly startedAhead: boolean;
  /** An admitted request's prefill counts only what is left of it (its predicted time less the time since admission). */
  readonly remainingPrefill: boolean;
  /** Charge what the request's prefill and decode cost the requests already running there (marginal latency). */
  readonly interference: boolean;
  /**
   * The prefill interference counts the requests queued ahead of this one with those decoding: they
   * are prefilled first, so they decode by the time its prefill runs and it delays them too.
   */
  readonly aheadDecoding: boolean;
  /**
   * The prefill interference counts the arrivals expected to queue behind the request while it waits
   * (the instance's share of the cluster's arrival rate x the prefill queued ahead): they wait for its
   * prefill too. Joining a queue delays everyone who joins it later; without this, a queue looks as
   * cheap to the tenth request as to the first.
   */
  readonly laterArrivals: boolean;
  /**
   * The requests decoding now and those queued ahead delay-count only while their expected decode
   * (their predicted output x the step time) still runs when the request's prefill starts: behind a
   * queue longer than their decodes, most will have finished.
   */
  readonly decodeEnds: boolean;
  /**
   * r's decode stretched by 1 / (1 - the instance's recent prefill share): its iterations share the
   * instance with the prefill chunks routed there (measurement log, step 23).
   */
  readonly prefillShare: boolean;
  /**
   * The prefill share's cap: r's decode stretches at most 1 / (1 - cap). A decode iteration with a
   * 512-token chunk beside it takes 1.4-2.7x one without when the chunk is early in its prompt
   * (Mistral-7B A6000 preset), more deep in a long one; 0.5 (at most 2x), and prefill routed beyond
   * it waits in the queue, which Q_i prices. Measured against 0.75 and 0.9 (measurement log, step 23).
   */
  readonly maxPrefillShare: number;
  /** r's decode step at the instance's flights' mean context with r's (else the batch at r's context). */
  readonly instanceContexts: boolean;
  /** Weight of the interference terms (1: the sum of every request's latency; 0: the request's own). */
  readonly interferenceWeight: number;
  /**
   * How latency counts in the objective beyond the window's mean latency of finished requests: as
   * itself up to that mean and as its p-th power beyond it (joined with slope 1), so r's own latency
   * past the mean costs more, and each request r delays weighs max(1, its expected latency / the
   * mean)^(p - 1). 1: the sum of latencies (the mean alone); 2 (the default): a sum of squares
   * beyond the mean, which trades a little mean for the tail (measurement log, steps 33 and 34).
   */
  readonly latencyPower: number;
  /**
   * What `latencyPower` measures a latency against: 'fleet', the window's mean over every instance;
   * 'model' (the default), the mean over the instances of the instance's own cost model, for r's own
   * latency there and for the requests it delays there (a request slow because its GPU is slow is
   * not tail, so the slower GPUs are not drained onto the faster); 'model-flights', the fleet's mean
   * for r's own latency and the model's for the requests it delays. All three are the same on a fleet
   * of one model (measurement log, step 34).
   */
  readonly latencyReference: 'fleet' | 'model' | 'model-flights';
  /** Ties in cost and in flight go to the instance with the smaller share of its KV in use (else the lower id). */
  readonly memoryTieBreak: boolean;
  /** Include the eviction cost M. */
  readonly evictionCost: boolean;
  /** Weight of M. */
  readonly evictionWeight: number;
  /**
   * Price what a miss displaces (measurement log, step 35): on an instance that evicted within the
   * window, each token the request computes evicts one, and the window's share of evicted tokens that
   * requests wanted again (found in the tree, cached nowhere) is charged as that share of its prefill.
   * E2's M prices only the eviction needed to fit now, by popularity, and is 0 wherever the cache
   * has room at the moment of routing, also while it churns.
   */
  readonly displacement: boolean;
  /**
   * Model an instance's LRU eviction on the global side, until the instance reports an eviction
   * itself (then its reports are the authority). The model evicts at routing time, for queued
   * requests whose KV is not resident yet, so under a queue it drops prefixes the engine still holds.
   */
  readonly predictEvictions: boolean;
  /** Estimate output length per key portion of the prompt (else the cluster's window average). */
  readonly perPrefixOutput: boolean;
  /** Output length assumed before any request in the window has finished. */
  readonly defaultOutputTokens: number;
  /** A decision expires the window itself when the last expiry (tick) is older than this many seconds. */
  readonly maxWindowStaleness: number;
}

export const E2_PLUS_DEFAULTS: Required<E2PlusOptions> = {
  windowSeconds: 180,
  queueOrder: 'lpm',
  lpmFcfsAbove: LPM_FCFS_ABOVE,
  startedAhead: true,
  remainingPrefill: true,
  interference: true,
  interferenceWeight: 1,
  latencyPower: 2,
  latencyReference: 'model',
  aheadDecoding: true,
  laterArrivals: true,
  decodeEnds: true,
  prefillShare: true,
  maxPrefillShare: 0.5,
  instanceContexts: true,
  memoryTieBreak: true,
  evictionCost: true,
  evictionWeight: 1,
  displacement: true,
  predictEvictions: true,
  perPrefixOutput: true,
  defaultOutputTokens: 45,
  maxWindowStaleness: 1,
};
