import type { ClusterNode } from '../../cluster-tree.ts';
import type { InstanceId } from '../../types.ts';

/** Queueing times of one key portion on one instance, in two half-window buckets. */
class HalfWindowAverage {
  bucket = -1;
  currentSum = 0;
  currentCount = 0;
  previousSum = 0;
  previousCount = 0;

  record(bucket: number, value: number): void {
    this.roll(bucket);
    this.currentSum += value;
    this.currentCount++;
  }

  merge(other: HalfWindowAverage): void {
    const bucket = Math.max(this.bucket, other.bucket);
    this.roll(bucket);
    other.roll(bucket);
    this.currentSum += other.currentSum;
    this.currentCount += other.currentCount;
    this.previousSum += other.previousSum;
    this.previousCount += other.previousCount;
  }

  roll(bucket: number): void {
    if (bucket === this.bucket) return;
    if (bucket === this.bucket + 1) {
      this.previousSum = this.currentSum;
      this.previousCount = this.currentCount;
    } else {
      this.previousSum = 0;
      this.previousCount = 0;
    }
    this.currentSum = 0;
    this.currentCount = 0;
    this.bucket = bucket;
  }
}

export interface ReplicationTrigger {
  readonly node: ClusterNode;
  readonly instance: InstanceId;
  readonly previousAverage: number;
  readonly currentAverage: number;
}

/**
 * Detects a prefix whose average queueing time doubles across the window (paper 3.2): the mean
 * queueing time of its requests in the latest half of H against the half before it.
 */
export class QueueTimeDetector {
  private readonly stats = new Map<ClusterNode, Map<InstanceId, HalfWindowAverage>>();
  private readonly flagged = new Set<HalfWindowAverage>();
  private readonly owners = new Map<HalfWindowAverage, [ClusterNode, InstanceId]>();

  constructor(
    private readonly halfWindow: number,
    private readonly factor: number,
    private readonly minSamples: number,
    private readonly minQueueSeconds: number,
  ) {}

  record(node: ClusterNode, instance: InstanceId, queueSeconds: number, now: number): void {
    let byInstance = this.stats.get(node);
    if (byInstance === undefined) {
      byInstance = new Map();
      this.stats.set(node, byInstance);
    }
    let avg = byInstance.get(instance);
    if (avg === undefined) {
      avg = new HalfWindowAverage();
      byInstance.set(instance, avg);
      this.owners.set(avg, [node, instance]);
    }
    avg.record(Math.floor(now / this.halfWindow), queueSeconds);
    this.flagged.add(avg);
  }

  /** Prefixes whose queueing time doubled, checked only for those that saw new samples. */
  takeTriggers(now: number): ReplicationTrigger[] {
    const bucket = Math.floor(now / this.halfWindow);
    const out: ReplicationTrigger[] = [];
    for (const avg of this.flagged) {
      avg.roll(bucket);
      if (avg.currentCount < this.minSamples || avg.previousCount < this.minSamples) continue;
      const cur = avg.currentSum / avg.currentCount;
      const prev = avg.previousSum / avg.previousCount;
      if (cur >= this.minQueueSeconds && cur >= this.factor * prev) {
        const [node, instance] = this.owners.get(avg)!;
        out.push({ node, instance, previousAverage: prev, currentAverage: cur });
        // Start over, so one doubling triggers once.
        avg.previousSum = 0;
        avg.previousCount = 0;
      }
    }
    this.flagged.clear();
    return out;
  }

  /** Move `from`'s samples to `to` (a split changed which node is the key portion). */
  transfer(from: ClusterNode, to: ClusterNode): void {
    const moving = this.stats.get(from);
    if (moving === undefined || from === to) return;
    this.stats.delete(from);
    let target = this.stats.get(to);
    if (target === undefined) {
      target = new Map();
      this.stats.set(to, target);
    }
    for (const [instance, avg] of moving) {
      const into = target.get(instance);
      if (into === undefined) {
        target.set(instance, avg);
        this.owners.set(avg, [to, instance]);
        continue;
      }
      into.merge(avg);
      this.owners.delete(avg);
      if (this.flagged.delete(avg)) this.flagged.add(into);
    }
  }

  forgetNode(node: ClusterNode): void {
    const byInstance = this.stats.get(node);
    if (byInstance === undefined) return;
    for (const avg of byInstance.values()) {
      this.owners.delete(avg);
      this.flagged.delete(avg);
    }
    this.stats.delete(node);
  }

  forgetInstance(instance: InstanceId): void {
    for (const [node, byInstance] of this.stats) {
      const avg = byInstance.get(instance);
      if (avg === undefined) continue;
      this.owners.delete(avg);
      this.flagged.delete(avg);
      byInstance.delete(instance);
      if (byInstance.size === 0) this.stats.delete(node);
    }
  }
}

export interface SubtreeLoad {
  readonly node: ClusterNode;
  readonly load: number;
}

/**
 * Split a prefix's subtree by load between its instance and a new replica: greedily, heaviest
 * child first, to whichever side carries less so far. Returns the children that move to the replica.
 */
export function splitSubtreeByLoad(children: readonly SubtreeLoad[]): ClusterNode[] {
  const sorted = [...children].sort((a, b) => b.load - a.load);
  let stay = 0;
  let move = 0;
  const moved: ClusterNode[] = [];
  for (const c of sorted) {
    if (move < stay) {
      moved.push(c.node);
      move += c.load;
    } else {
      stay += c.load;
    }
  }
  return moved;
}
