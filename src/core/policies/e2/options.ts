import type { CostModel } from '../../cost-model/types.ts';
import type { InstanceCost } from '../../types.ts';

/** Why E2 chose an instance: the branches of Algorithm 1 and of its background adjustments. */
export const E2_BRANCHES = ['exploit', 'explore', 'rebalance', 'replica', 'phase-mix'] as const;
export type E2Branch = (typeof E2_BRANCHES)[number];

/** E2's cost of one instance: Algorithm 2's parts. */
export interface E2InstanceCost extends InstanceCost {
  /** Recent load L (seconds of work in the window). */
  readonly load: number;
  /** Eviction cost M. */
  readonly eviction: number;
  /** This request's own prefill time P. */
  readonly prefill: number;
}

export interface E2Options {
  readonly costModel: CostModel;
  /** History window H in seconds (paper: 3 minutes). */
  readonly windowSeconds: number;
  /** Include the eviction cost M in the load cost. */
  readonly evictionCost: boolean;
  /** Model each instance's LRU eviction on the global side (needed when engines do not report evictions). */
  readonly predictEvictions: boolean;
  /** Post-assignment rebalancing between the heaviest and lightest instances. */
  readonly rebalance: boolean;
  /** Th_bal: rebalance when the heaviest load exceeds this multiple of the lightest. */
  readonly rebalanceThreshold: number;
  /** Seconds between rebalancing rounds (run from tick). */
  readonly rebalanceInterval: number;
  /** Replicate a prefix whose queueing time doubles across the window. */
  readonly prefixReplication: boolean;
  readonly replicationFactor: number;
  /** Samples needed in each half of the window before a doubling counts. */
  readonly replicationMinSamples: number;
  /** Queueing times below this (seconds) never trigger prefix replication. */
  readonly replicationMinQueueSeconds: number;
  /**
   * Which instances exploit considers. 'deepest' (default) = the instances caching the deepest
   * matched node: the paper's "the GPU that caches the longest-matched prefix" (section 1) and the
   * authors' nearest allocated ancestor. 'key-portion' = every instance caching the key portion of
   * the matched prefix (the node with more tokens than all its predecessors, a reading of 3.2's "the
   * tree node with the longest tokens in the matched prefix"), each priced with its own miss.
   */
  readonly exploitCandidates: 'key-portion' | 'deepest';
  /** Prefill/decode balancing of explored requests. */
  readonly phaseMix: boolean;
  /**
   * How an instance counts as decode-heavy. 'relative' (the paper's prose: load-cost comparison "if
   * all GPUs have relatively balanced decoding-prefill loads"): the highest decode ratio exceeds the
   * mean of the other active instances' ratios by more than `phaseMixMargin`. 'absolute'
   * (Algorithm 1 read literally): the highest ratio exceeds ImbalR = `phaseMixRatio`.
   */
  readonly phaseMixTest: 'relative' | 'absolute';
  /** The relative test's margin (decode ratios are in [0, 1]). */
  readonly phaseMixMargin: number;
  /**
   * ImbalR of the absolute test: an instance is decode-heavy when the mean cached share of its
   * windowed requests (1 for a decode-phase unit, 0 for a prefill-phase unit) exceeds this.
   */
  readonly phaseMixRatio: number;
  /**
   * Our extension, off by default (Infinity): the decode-heavy instance takes the request only if
   * its load cost is at most this multiple of the cheapest instance's. The paper puts prefill/decode (phase-mix) balancing
   * before the cost comparison unconditionally; a finite guard keeps it from building a hot spot.
   */
  readonly phaseMixLoadGuard: number;
  /**
   * Which requests L charges a decode to. 'window' (the paper's text, 3.2): every request in H,
   * DT(average output in H) each. 'inflight' (the authors' code, `ref_counter`): only the requests
   * still in flight on the instance; the prefill part stays the window's. A finished request's decode
   * then stops weighing on its instance at once instead of for the rest of H. Only L changes:
   * rebalancing and prefix replication keep pricing key portions with a decode per windowed request.
   */
  readonly decodeLoad: 'window' | 'inflight';
  /** Output length assumed before any request in the window has finished. */
  readonly defaultOutputTokens: number;
  /**
   * Window expiry runs in tick (background work, as in the paper); a decision expires the window
   * itself only when the last expiry is older than this many seconds (ticks stopped or are slow).
   */
  readonly maxWindowStaleness: number;
}

export const E2_DEFAULTS: Required<Omit<E2Options, 'costModel'>> = {
  windowSeconds: 180,
  evictionCost: true,
  predictEvictions: true,
  rebalance: true,
  rebalanceThreshold: 1.5,
  rebalanceInterval: 1,
  prefixReplication: true,
  replicationFactor: 2,
  replicationMinSamples: 4,
  replicationMinQueueSeconds: 0.05,
  exploitCandidates: 'deepest',
  phaseMix: true,
  phaseMixTest: 'relative',
  phaseMixMargin: 0.2,
  phaseMixRatio: 0.8,
  phaseMixLoadGuard: Number.POSITIVE_INFINITY,
  decodeLoad: 'window',
  defaultOutputTokens: 45,
  maxWindowStaleness: 1,
};
