import type { ClusterNode } from '../../cluster-tree.ts';
import type { CostModel } from '../../cost-model/types.ts';
import type { InstanceId } from '../../types.ts';

/** One routed request as the window H remembers it. */
export interface WindowEntry {
  readonly time: number;
  readonly id: string;
  readonly instance: InstanceId;
  /** The request's last tree node: its path is how it shares prefixes. */
  readonly leaf: ClusterNode | null;
  readonly promptTokens: number;
  /** Prompt tokens served from cache (predicted at routing, corrected by the engine's report). */
  cachedTokens: number;
  /** PrefillTime(missed tokens) on its instance. */
  prefillSeconds: number;
  /** Output tokens once finished; -1 before. */
  outputTokens: number;
  /** False once the request failed: its work no longer counts. */
  live: boolean;
  /** True once the window dropped it. */
  expired: boolean;
}

/**
 * Per-instance sums over the requests in the window, kept incrementally so that E2's load
 * L_i = sum over r in H on i of (PrefillTime(missed_r) + DecodeTime(average output in H)) is O(1).
 */
export class InstanceLoad {
  requests = 0;
  prefillSeconds = 0;
  promptTokens = 0;
  cachedTokens = 0;
  /** Sum over requests of their cached share of the prompt (0 = a prefill unit, 1 = a decode unit). */
  cachedShares = 0;
  finished = 0;
  outputTokens = 0;

  add(e: WindowEntry): void {
    this.requests++;
    this.prefillSeconds += e.prefillSeconds;
    this.promptTokens += e.promptTokens;
    this.cachedTokens += e.cachedTokens;
    this.cachedShares += cachedShare(e);
    if (e.outputTokens >= 0) {
      this.finished++;
      this.outputTokens += e.outputTokens;
    }
  }

  remove(e: WindowEntry): void {
    this.requests--;
    if (this.requests <= 0) {
      // Reset exactly: repeated float add/subtract must not leave a residue on an idle instance.
      this.requests = 0;
      this.prefillSeconds = 0;
      this.promptTokens = 0;
      this.cachedTokens = 0;
      this.cachedShares = 0;
      this.finished = 0;
      this.outputTokens = 0;
      return;
    }
    this.prefillSeconds = Math.max(0, this.prefillSeconds - e.prefillSeconds);
    this.promptTokens -= e.promptTokens;
    this.cachedTokens -= e.cachedTokens;
    this.cachedShares = Math.max(0, this.cachedShares - cachedShare(e));
    if (e.outputTokens >= 0) {
      this.finished--;
      this.outputTokens -= e.outputTokens;
    }
  }

  /**
   * How decode-heavy the instance's recent work is, by units as in the paper: a request whose prompt
   * is all cached is a decode-phase unit (1), one with nothing cached a prefill-phase unit (0), a
   * partly cached one in between; this is their mean over the requests in the window.
   */
  get decodeRatio(): number {
    return this.requests > 0 ? this.cachedShares / this.requests : 0;
  }
}

/** Computes L_i and its decode part from the window sums and the cost model. */
export class LoadEstimator {
  constructor(
    private readonly costModel: CostModel,
    private readonly defaultOutputTokens: number,
  ) {}

  /** Average output length observed on the instance in H, else across the cluster, else the default. */
  averageOutput(load: InstanceLoad, cluster: { finished: number; outputTokens: number }): number {
    if (load.finished > 0) return load.outputTokens / load.finished;
    if (cluster.finished > 0) return cluster.outputTokens / cluster.finished;
    return this.defaultOutputTokens;
  }

  /** DecodeTime(average output in H), at the instance's average prompt length as context. */
  decodeSeconds(load: InstanceLoad, cluster: { finished: number; outputTokens: number }): number {
    const context = load.requests > 0 ? load.promptTokens / load.requests : 0;
    return this.costModel.decodeTime(this.averageOutput(load, cluster), context);
  }

  /**
   * L_i: the window's prefill seconds plus DT(average output) for each of `decoding` requests (the
   * window's request count by default, as the paper sums; the authors' code counts those in flight).
   */
  load(
    load: InstanceLoad,
    cluster: { finished: number; outputTokens: number },
    decoding = load.requests,
  ): number {
    // An empty window's sums are exactly 0 (InstanceLoad.remove resets them).
    if (decoding === 0) return load.prefillSeconds;
    return load.prefillSeconds + decoding * this.decodeSeconds(load, cluster);
  }
}

function cachedShare(e: WindowEntry): number {
  return e.promptTokens > 0 ? e.cachedTokens / e.promptTokens : 0;
}
