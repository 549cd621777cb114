import type { ClusterNode } from '../../cluster-tree.ts';
import type { InstanceId } from '../../types.ts';

/** Future exploit traffic of `node` that would go to `from` goes to `to` instead. */
export interface Redirect {
  readonly from: InstanceId;
  readonly to: InstanceId;
  /** When it was decided, and how much windowed load (seconds) it was meant to move. */
  readonly at: number;
  readonly movedLoad: number;
  readonly reason: 'rebalance' | 'replica';
}

/**
 * Redirects by tree node. A redirect moves load only as new requests arrive, so until the window
 * has turned over (one horizon) part of the move is still "pending": `pendingShift` reports it so
 * that the next rebalancing round does not move the same load twice.
 */
export class RedirectTable {
  private readonly byNode = new Map<ClusterNode, Redirect[]>();

  get size(): number {
    return this.byNode.size;
  }

  add(node: ClusterNode, redirect: Redirect): void {
    const list = this.byNode.get(node);
    if (list === undefined) this.byNode.set(node, [redirect]);
    else {
      const i = list.findIndex((r) => r.from === redirect.from);
      if (i >= 0) list[i] = redirect;
      else list.push(redirect);
    }
  }

  has(node: ClusterNode, from: InstanceId): boolean {
    return this.byNode.get(node)?.some((r) => r.from === from) === true;
  }

  /** Where a request through `path` that would run on `instance` should go instead, if anywhere. */
  target(path: readonly ClusterNode[], instance: InstanceId): Redirect | undefined {
    if (this.byNode.size === 0) return undefined;
    // Deepest redirect wins: it is the most specific (a split subtree inside a moved prefix).
    for (let p = path.length - 1; p >= 0; p--) {
      const list = this.byNode.get(path[p]!);
      if (list === undefined) continue;
      for (const r of list) if (r.from === instance) return r;
    }
    return undefined;
  }

  /** Load (seconds) each instance is still expected to lose (negative) or gain (positive). */
  pendingShift(now: number, horizon: number, into: Map<InstanceId, number>): void {
    for (const list of this.byNode.values()) {
      for (const r of list) {
        const left = r.movedLoad * Math.max(0, 1 - (now - r.at) / horizon);
        into.set(r.from, (into.get(r.from) ?? 0) - left);
        into.set(r.to, (into.get(r.to) ?? 0) + left);
      }
    }
  }

  /** Drop redirects that are fully reflected in the window, reversed, or about instances that left. */
  prune(keep: (node: ClusterNode, r: Redirect) => boolean): void {
    for (const [node, list] of this.byNode) {
      const kept = list.filter((r) => keep(node, r));
      if (kept.length === 0) this.byNode.delete(node);
      else if (kept.length !== list.length) this.byNode.set(node, kept);
    }
  }

  forgetNode(node: ClusterNode): void {
    this.byNode.delete(node);
  }

  /** Move `from`'s redirects to `to` (a split changed which node is the key portion). */
  transfer(from: ClusterNode, to: ClusterNode): void {
    const list = this.byNode.get(from);
    if (list === undefined || from === to) return;
    this.byNode.delete(from);
    for (const r of list) this.add(to, r);
  }

  *all(): Generator<[ClusterNode, Redirect]> {
    for (const [node, list] of this.byNode) for (const r of list) yield [node, r];
  }
}

/** A key portion of the heavy instance, with the windowed load its requests put there. */
export interface MovableLoad {
  readonly node: ClusterNode;
  readonly load: number;
}

export interface PlannedMove {
  readonly node: ClusterNode;
  readonly from: InstanceId;
  readonly to: InstanceId;
  readonly load: number;
}

/**
 * Post-assignment rebalancing (paper 3.2): while the heaviest instance carries more than
 * `threshold` times the lightest's load, move the heavy one's key portions (cheapest first, so the
 * move can stop close to balance) to the light one, never so far that the pair inverts; then repeat
 * with the next heaviest and lightest instances.
 */
export function planRebalance(
  loads: ReadonlyMap<InstanceId, number>,
  threshold: number,
  movable: (heavy: InstanceId) => MovableLoad[],
): PlannedMove[] {
  const order = [...loads.entries()].sort((a, b) => a[1] - b[1] || a[0] - b[0]);
  const moves: PlannedMove[] = [];
  let lo = 0;
  let hi = order.length - 1;
  while (lo < hi) {
    const [light, lightLoad0] = order[lo]!;
    const [heavy, heavyLoad0] = order[hi]!;
    if (!(heavyLoad0 > threshold * lightLoad0) || heavyLoad0 <= 0) break;
    let heavyLoad = heavyLoad0;
    let lightLoad = lightLoad0;
    const candidates = movable(heavy).sort((a, b) => a.load - b.load);
    for (const c of candidates) {
      if (heavyLoad - c.load < lightLoad + c.load) break;
      moves.push({ node: c.node, from: heavy, to: light, load: c.load });
      heavyLoad -= c.load;
      lightLoad += c.load;
      if (heavyLoad <= threshold * lightLoad) break;
    }
    lo++;
    hi--;
  }
  return moves;
}
