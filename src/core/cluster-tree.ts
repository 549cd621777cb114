import { type RadixDataOps, type RadixNode, RadixTree } from './radix-tree.ts';
import type { InstanceId, Tokens } from './types.ts';

/**
 * What one instance means to one node of the global tree. A slot that is cached and not pinned by
 * an in-flight request is linked into its instance's LRU list (oldest first): the list holds exactly
 * what the instance could evict, so its head is always a victim. A path is pinned when routed and
 * relinked leaf first when released, so a parent is always more recent than its children.
 */
export class InstanceSlot {
  cached = false;
  /** Requests routed to this instance through this node that are still inside the window H. */
  windowCount = 0;
  /** Requests routed to this instance through this node and not yet finished (pins the node). */
  inflight = 0;
  lastAccess = 0;
  prev: InstanceSlot | null = null;
  next: InstanceSlot | null = null;
  constructor(
    readonly node: ClusterNode,
    readonly instance: InstanceId,
  ) {}

  get idle(): boolean {
    return !this.cached && this.windowCount === 0 && this.inflight === 0;
  }
}

export interface ClusterNodeData {
  /** Per-instance state; few instances per node in practice, so a small array beats a map. */
  slots: InstanceSlot[];
  /** Requests through this node in the window, over all instances. */
  windowTotal: number;
  /** Scratch mark: the routing decision that currently reads this node (see evictionCost). */
  mark: number;
}

export type ClusterNode = RadixNode<ClusterNodeData>;

/** Per-instance cache bookkeeping. */
class InstanceCache {
  usedTokens = 0;
  lruHead: InstanceSlot | null = null;
  lruTail: InstanceSlot | null = null;
  constructor(
    public capacityTokens: number,
    /** A prefix pinned by an in-flight request cannot serve another one (see InstanceInfo). */
    public exclusivePrefixes: boolean,
  ) {}
}

/** The result of matching a prompt: the path and how much of it each instance caches. */
export interface ClusterMatch {
  readonly path: ClusterNode[];
  /** Prompt tokens present in the tree (cached somewhere or remembered from the window). */
  readonly matched: number;
  readonly lastNodeMatched: number;
  /** Longest prefix of the prompt cached on any instance. */
  readonly bestCached: number;
  /** Instances that cache `bestCached` tokens (those caching the deepest cached node). */
  readonly bestInstances: InstanceId[];
}

export type EvictionListener = (instance: InstanceId, node: ClusterNode) => void;

/**
 * The global prefix tree of the paper: which instance caches which prefix, how many requests in
 * the window went through each node on each instance, what is pinned by in-flight requests, and a
 * per-instance LRU model of each instance's KV cache, used both to price evictions (E2's M) and to
 * predict them when engines do not report theirs. Nodes that no instance caches, no in-flight
 * request pins and no request in the window used are removed, so the tree stays bounded.
 */
export class ClusterTree {
  readonly tree: RadixTree<ClusterNodeData>;
  private readonly instances: (InstanceCache | undefined)[] = [];
  /** Scratch: cached match length per instance for the last match (cleared lazily). */
  private matchLen = new Int32Array(16);
  private touchedInstances: InstanceId[] = [];
  private markCounter = 0;
  /** The latest match and its prompt, reusable by `assign` while the tree has not changed since. */
  private lastMatch: ClusterMatch | null = null;
  private lastMatchTokens: Tokens | null = null;
  private lastMatchVersion = -1;
  /** Told when a node leaves an instance's cache (predicted or reported). */
  onUncache: EvictionListener | null = null;
  /** Told when a node is removed from the tree. */
  onRemove: ((node: ClusterNode) => void) | null = null;
  /** Told after a split: `head` is the new upper part, `tail` the original node, now shorter. */
  onSplit: ((head: ClusterNode, tail: ClusterNode) => void) | null = null;
  /** Told before `parent` merges into its only child `child`, which survives. */
  onMerge: ((parent: ClusterNode, child: ClusterNode) => void) | null = null;

  constructor() {
    const ops: RadixDataOps<ClusterNodeData> = {
      create: () => ({ slots: [], windowTotal: 0, mark: 0 }),
      split: (head, tail) => {
        this.splitSlots(head, tail);
        this.onSplit?.(head, tail);
      },
      merge: (parent, child) => {
        this.onMerge?.(parent, child);
        for (const slot of parent.data.slots) {
          if (slot.cached) this.unlink(this.instances[slot.instance]!, slot);
          // The merged node stands for the parent's tokens too: keep their latest use.
          const survivor = findSlot(child, slot.instance);
          if (survivor !== undefined && survivor.lastAccess < slot.lastAccess)
            survivor.lastAccess = slot.lastAccess;
        }
        parent.data.slots = [];
      },
    };
    this.tree = new RadixTree(ops);
  }

  get nodeCount(): number {
    return this.tree.size;
  }

  addInstance(instance: InstanceId, capacityTokens: number, exclusivePrefixes = false): void {
    const existing = this.instances[instance];
    if (existing !== undefined) {
      existing.capacityTokens = capacityTokens;
      existing.exclusivePrefixes = exclusivePrefixes;
      return;
    }
    this.instances[instance] = new InstanceCache(capacityTokens, exclusivePrefixes);
    if (instance >= this.matchLen.length) {
      const grown = new Int32Array(Math.max(instance + 1, this.matchLen.length * 2));
      grown.set(this.matchLen);
      this.matchLen = grown;
    }
  }

  hasInstance(instance: InstanceId): boolean {
    return this.instances[instance] !== undefined;
  }

  /** Forget everything an instance caches (it failed or left). Window and in-flight refs stay until they end. */
  removeInstanceCache(instance: InstanceId): void {
    const cache = this.instances[instance];
    if (cache === undefined) return;
    // Pinned nodes are not in the LRU list, so walk the tree: cached prefixes start at the root.
    const tops = this.tree.root.children === null ? [] : [...this.tree.root.children.values()];
    for (const top of tops) if (top.parent !== null) this.uncacheSubtree(instance, top);
  }

  /** Drop the instance entirely once nothing refers to it. */
  deleteInstance(instance: InstanceId): void {
    this.removeInstanceCache(instance);
    this.instances[instance] = undefined;
  }

  usedTokens(instance: InstanceId): number {
    return this.instances[instance]?.usedTokens ?? 0;
  }

  capacityTokens(instance: InstanceId): number {
    return this.instances[instance]?.capacityTokens ?? 0;
  }

  /** Match a prompt; fills the per-instance cached lengths read by `cachedOn`. */
  match(tokens: Tokens): ClusterMatch {
    for (const i of this.touchedInstances) this.matchLen[i] = 0;
    this.touchedInstances.length = 0;
    const m = this.tree.match(tokens);
    let bestCached = 0;
    let deepest: ClusterNode | null = null;
    for (let p = 0; p < m.path.length; p++) {
      const node = m.path[p]!;
      const end = p === m.path.length - 1 ? node.prefixLen + m.lastNodeMatched : node.endLen;
      let any = false;
      for (const slot of node.data.slots) {
        if (!slot.cached || (slot.inflight > 0 && this.instances[slot.instance]?.exclusivePrefixes === true))
          continue;
        if (this.matchLen[slot.instance] === 0) this.touchedInstances.push(slot.instance);
        this.matchLen[slot.instance] = end;
        any = true;
      }
      if (any) {
        bestCached = end;
        deepest = node;
      }
    }
    const bestInstances: InstanceId[] = [];
    if (deepest !== null)
      for (const s of deepest.data.slots)
        if (s.cached && this.matchLen[s.instance] === bestCached) bestInstances.push(s.instance);
    const result: ClusterMatch = {
      path: m.path,
      matched: m.matched,
      lastNodeMatched: m.lastNodeMatched,
      bestCached,
      bestInstances,
    };
    this.lastMatch = result;
    this.lastMatchTokens = tokens;
    this.lastMatchVersion = this.tree.version;
    return result;
  }

  /** Tokens of the last matched prompt that `instance` caches (valid until the next match). */
  cachedOn(instance: InstanceId): number {
    return instance < this.matchLen.length ? this.matchLen[instance]! : 0;
  }

  /**
   * Record that `tokens` was routed to `instance`: insert it, count it in flight and in the window
   * on every node of its path, mark the path cached there (the engine will cache the prompt) and
   * make it most recently used. Returns the leaf (null for an empty prompt). Policies without a
   * window pass `countInWindow = false` and never call releaseWindow.
   */
  assign(
    tokens: Tokens,
    instance: InstanceId,
    now: number,
    countInWindow = true,
    lastMatch?: ClusterMatch,
  ): ClusterNode | null {
    const cache = this.requireInstance(instance);
    const path =
      lastMatch !== undefined &&
      lastMatch === this.lastMatch &&
      this.lastMatchTokens === tokens &&
      this.lastMatchVersion === this.tree.version
        ? this.tree.insertMatched(tokens, lastMatch)
        : this.tree.insert(tokens);
    this.lastMatch = null;
    for (let p = path.length - 1; p >= 0; p--) {
      const node = path[p]!;
      const slot = this.slotFor(node, instance);
      slot.inflight++;
      if (countInWindow) {
        slot.windowCount++;
        node.data.windowTotal++;
      }
      if (!slot.cached) {
        slot.cached = true;
        cache.usedTokens += node.length;
      }
      slot.lastAccess = now;
      this.unlink(cache, slot); // pinned: out of the LRU list until released
    }
    const leaf = path[path.length - 1] ?? null;
    this.compact(leaf);
    return leaf;
  }

  /** End an in-flight request's pin on the path from `leaf` to the root. */
  releaseInflight(leaf: ClusterNode | null, instance: InstanceId): void {
    const cache = this.instances[instance];
    this.walkUp(leaf, instance, (slot) => {
      slot.inflight--;
      // Unpinned: evictable again, most recently used. The walk goes leaf first, so parents link after.
      if (slot.inflight === 0 && slot.cached && cache !== undefined) this.linkTail(cache, slot);
    });
  }

  /** A request left the window: drop its counts on the path from `leaf` to the root. */
  releaseWindow(leaf: ClusterNode | null, instance: InstanceId): void {
    for (let n = leaf; n !== null && n !== this.tree.root; n = n.parent) n.data.windowTotal--;
    this.walkUp(leaf, instance, (slot) => {
      slot.windowCount--;
    });
  }

  /** Windowed request count of `instance` on `node`. */
  windowCount(node: ClusterNode, instance: InstanceId): number {
    return findSlot(node, instance)?.windowCount ?? 0;
  }

  isCached(node: ClusterNode, instance: InstanceId): boolean {
    return findSlot(node, instance)?.cached === true;
  }

  /** A fresh mark for `evictionCost`: nodes on the path being routed must not be priced as victims. */
  markPath(path: readonly ClusterNode[]): number {
    const mark = ++this.markCounter;
    for (const n of path) n.data.mark = mark;
    return mark;
  }

  /**
   * Price what `instance` would evict, in LRU order, to make room for `newTokens` more tokens:
   * the sum of `price(node, tokensEvicted)` over the victims. Pinned nodes and nodes carrying
   * `mark` (the request's own path) are skipped. Reads only the LRU head, so the work is
   * proportional to what would be evicted, never to the cache size (bounded by `maxVisits`).
   */
  evictionCost(
    instance: InstanceId,
    newTokens: number,
    mark: number,
    price: (node: ClusterNode, tokens: number, slot: InstanceSlot) => number,
    maxVisits = 256,
  ): number {
    const cache = this.instances[instance];
    if (cache === undefined) return 0;
    let need = cache.usedTokens + newTokens - cache.capacityTokens;
    let cost = 0;
    let visits = 0;
    for (let s = cache.lruHead; s !== null && need > 0 && visits < maxVisits; s = s.next, visits++) {
      if (s.node.data.mark === mark) continue;
      const take = Math.min(need, s.node.length);
      cost += price(s.node, take, s);
      need -= take;
    }
    return cost;
  }

  /**
   * Predict the instance's own LRU eviction: while it holds more than its capacity, evict the
   * least recently used unpinned tokens (the tail of a node first, as engines evict in part).
   * Restarts from the LRU head after each victim: compaction may merge the nodes it would visit next.
   */
  evictToCapacity(instance: InstanceId): void {
    const cache = this.instances[instance];
    if (cache === undefined) return;
    while (cache.usedTokens > cache.capacityTokens) {
      const s = cache.lruHead;
      if (s === null) return; // everything left is pinned by in-flight requests
      const excess = cache.usedTokens - cache.capacityTokens;
      const node = s.node;
      // Keep the head, evict the tail: the split leaves `node` as the tail.
      if (excess < node.length) this.tree.splitAt(node, node.length - excess);
      this.uncacheSubtree(instance, node);
    }
  }

  /**
   * The instance reports that `path[keptTokens..]` and everything below it left its cache, at
   * `evictedAt` (the engine's time; a report may arrive later). Splits a node when the boundary
   * falls inside it. A report can be stale: a node that a request routed after `evictedAt` went
   * through (`lastAccess > evictedAt`), or that an in-flight request pins, is cached again by the
   * engine when that request runs, so the report is clipped to the nodes nobody holds. Both marks
   * run from a node up to the root (routing touches and pins whole paths), so what is left to
   * uncache is a set of whole subtrees and no cached node ends up under an uncached one.
   * Without `evictedAt` only in-flight pins protect a node.
   */
  evictReported(
    instance: InstanceId,
    path: Tokens,
    keptTokens: number,
    evictedAt = Number.POSITIVE_INFINITY,
  ): void {
    if (this.instances[instance] === undefined) return;
    if (keptTokens >= path.length) return;
    const m = this.tree.match(path.subarray(0, keptTokens + 1));
    if (m.matched <= keptTokens) return; // the tree no longer holds that token on this path
    // Find the node that contains token index `keptTokens` on this path.
    for (let p = 0; p < m.path.length; p++) {
      const node = m.path[p]!;
      if (node.endLen <= keptTokens) continue;
      if (node.prefixLen > keptTokens) return;
      const slot = findSlot(node, instance);
      if (slot === undefined || !slot.cached) return;
      if (heldAfter(slot, evictedAt)) {
        // Its head before `keptTokens` stays anyway; below it, evict only what nobody holds.
        this.uncacheUnheld(instance, node, evictedAt, false);
        return;
      }
      // After a split the original object is the tail starting at keptTokens.
      if (node.prefixLen < keptTokens) this.tree.splitAt(node, keptTokens - node.prefixLen);
      this.uncacheUnheld(instance, node, evictedAt, true);
      return;
    }
  }

  /**
   * Uncache the subtrees under `top` (and `top` itself if `includeTop`) that `instance` caches and
   * that no request holds since `evictedAt`.
   */
  private uncacheUnheld(
    instance: InstanceId,
    top: ClusterNode,
    evictedAt: number,
    includeTop: boolean,
  ): void {
    const roots: ClusterNode[] = [];
    const stack: ClusterNode[] = [];
    if (includeTop) stack.push(top);
    else if (top.children !== null) for (const c of top.children.values()) stack.push(c);
    while (stack.length > 0) {
      const n = stack.pop()!;
      const slot = findSlot(n, instance);
      if (slot === undefined || !slot.cached) continue;
      if (!heldAfter(slot, evictedAt)) roots.push(n);
      else if (n.children !== null) for (const c of n.children.values()) stack.push(c);
    }
    // Uncaching one root may prune or merge nodes near another: skip those no longer in the tree.
    for (const r of roots) if (r.parent !== null) this.uncacheSubtree(instance, r);
  }

  /** Remove `node` and its cached descendants from `instance`'s cache. */
  uncacheSubtree(instance: InstanceId, node: ClusterNode): void {
    const cache = this.instances[instance];
    if (cache === undefined) return;
    if (node.childCount === 0) {
      // The common case (LRU victims are leaves): no subtree to walk.
      const slot = findSlot(node, instance);
      if (slot === undefined || !slot.cached) return;
      slot.cached = false;
      cache.usedTokens -= node.length;
      this.unlink(cache, slot);
      this.onUncache?.(instance, node);
      this.dropIfIdle(node, slot);
      if (node.data.slots.length === 0) this.prune(node);
      else this.compact(node);
      return;
    }
    const stack: ClusterNode[] = [node];
    const visited: ClusterNode[] = [];
    while (stack.length > 0) {
      const n = stack.pop()!;
      const slot = findSlot(n, instance);
      if (slot === undefined || !slot.cached) continue;
      visited.push(n);
      if (n.children !== null) for (const c of n.children.values()) stack.push(c);
    }
    // Change all state first; prune and compact after, since both can remove visited nodes.
    for (let v = visited.length - 1; v >= 0; v--) {
      const n = visited[v]!;
      const slot = findSlot(n, instance)!;
      slot.cached = false;
      cache.usedTokens -= n.length;
      this.unlink(cache, slot);
      this.onUncache?.(instance, n);
      this.dropIfIdle(n, slot);
    }
    for (let v = visited.length - 1; v >= 0; v--) {
      const n = visited[v]!;
      if (n.parent === null) continue; // already removed or merged away
      if (n.childCount === 0 && n.data.slots.length === 0) this.prune(n);
      else this.compact(n);
    }
  }

  /** Remove `node` and its now-useless ancestors if nothing refers to them. */
  prune(node: ClusterNode | null): void {
    while (
      node !== null &&
      node !== this.tree.root &&
      node.childCount === 0 &&
      node.data.slots.length === 0
    ) {
      const parent = node.parent;
      this.tree.removeLeaf(node);
      this.onRemove?.(node);
      node = parent;
    }
    this.compact(node);
  }

  /** Consistency check for tests: usage sums, LRU membership and order, pruning. Throws on a violation. */
  checkInvariants(): void {
    const used = new Map<InstanceId, number>();
    const evictable = new Set<InstanceSlot>();
    for (const node of this.tree.nodesDepthFirst()) {
      const d = node.data;
      let windowSum = 0;
      for (const s of d.slots) {
        if (s.node !== node) throw new Error('slot points at another node');
        if (s.idle) throw new Error('idle slot kept');
        if (s.windowCount < 0 || s.inflight < 0) throw new Error('negative count');
        windowSum += s.windowCount;
        if (s.cached) {
          used.set(s.instance, (used.get(s.instance) ?? 0) + node.length);
          if (s.inflight === 0) evictable.add(s);
          const parent = node.parent!;
          if (parent !== this.tree.root && !this.isCached(parent, s.instance)) {
            throw new Error('cached node under an uncached parent');
          }
        }
      }
      if (windowSum !== d.windowTotal) throw new Error(`window total ${d.windowTotal} != ${windowSum}`);
      if (node.childCount === 1 && sameState(node, node.children!.values().next().value as ClusterNode)) {
        throw new Error('a single-child chain with one state was left unmerged');
      }
      if (node.childCount === 0 && d.slots.length === 0) throw new Error('unreferenced leaf kept');
    }
    this.instances.forEach((cache, instance) => {
      if (cache === undefined) return;
      if ((used.get(instance) ?? 0) !== cache.usedTokens) throw new Error(`used tokens drift on ${instance}`);
      let count = 0;
      for (let s = cache.lruHead; s !== null; s = s.next) {
        if (!evictable.has(s) || s.instance !== instance)
          throw new Error('LRU holds an uncached or pinned slot');
        // Leaf-first: a node's parent must come later (more recent) in the list.
        const parentSlot = s.node.parent === this.tree.root ? null : findSlot(s.node.parent!, instance);
        // (A pinned parent is not in the list at all; it relinks after its children on release.)
        if (parentSlot != null && evictable.has(parentSlot) && !comesAfter(s, parentSlot)) {
          throw new Error('LRU order puts a parent before its child');
        }
        count++;
      }
      const expected = [...evictable].filter((s) => s.instance === instance).length;
      if (count !== expected) throw new Error(`LRU list has ${count} slots, expected ${expected}`);
    });
  }

  private requireInstance(instance: InstanceId): InstanceCache {
    const cache = this.instances[instance];
    if (cache === undefined) throw new Error(`unknown instance ${instance}`);
    return cache;
  }

  private slotFor(node: ClusterNode, instance: InstanceId): InstanceSlot {
    let slot = findSlot(node, instance);
    if (slot === undefined) {
      slot = new InstanceSlot(node, instance);
      node.data.slots.push(slot);
    }
    return slot;
  }

  /** Apply `change` to the instance's slot on every node from `leaf` up, then prune and compact from the leaf. */
  private walkUp(leaf: ClusterNode | null, instance: InstanceId, change: (slot: InstanceSlot) => void): void {
    for (let n = leaf; n !== null && n !== this.tree.root; n = n.parent) {
      const slot = findSlot(n, instance);
      if (slot !== undefined) {
        change(slot);
        this.dropIfIdle(n, slot);
      }
    }
    if (leaf !== null && leaf.parent !== null && leaf.childCount === 0 && leaf.data.slots.length === 0)
      this.prune(leaf);
    else this.compact(leaf);
  }

  /**
   * Merge single-child chains whose nodes mean the same to every instance, from `node` up. Splits
   * (partial evictions, branches that later vanish) would otherwise fragment paths for good.
   */
  compact(node: ClusterNode | null): void {
    let n = node;
    while (n !== null && n !== this.tree.root) {
      const parent = n.parent!;
      if (n.childCount === 1) {
        const child = n.children!.values().next().value as ClusterNode;
        if (sameState(n, child)) {
          this.tree.mergeIntoChild(n);
          n = child.parent;
          continue;
        }
      }
      n = parent;
    }
  }

  /** Remove a slot that no longer means anything; true if removed. */
  private dropIfIdle(node: ClusterNode, slot: InstanceSlot): boolean {
    if (!slot.idle) return false;
    const slots = node.data.slots;
    const at = slots.indexOf(slot);
    if (at >= 0) {
      slots[at] = slots[slots.length - 1]!;
      slots.pop();
    }
    return true;
  }

  /** Copy the tail's per-instance state onto a new head node; the head sits just after the tail in LRU order. */
  private splitSlots(head: ClusterNode, tail: ClusterNode): void {
    head.data.windowTotal = tail.data.windowTotal;
    head.data.mark = tail.data.mark;
    for (const t of tail.data.slots) {
      const h = new InstanceSlot(head, t.instance);
      h.cached = t.cached;
      h.windowCount = t.windowCount;
      h.inflight = t.inflight;
      h.lastAccess = t.lastAccess;
      head.data.slots.push(h);
      if (t.cached && t.inflight === 0) this.linkAfter(this.instances[t.instance]!, t, h);
    }
  }

  private linkTail(cache: InstanceCache, slot: InstanceSlot): void {
    slot.prev = cache.lruTail;
    slot.next = null;
    if (cache.lruTail !== null) cache.lruTail.next = slot;
    else cache.lruHead = slot;
    cache.lruTail = slot;
  }

  private linkAfter(cache: InstanceCache, anchor: InstanceSlot, slot: InstanceSlot): void {
    slot.prev = anchor;
    slot.next = anchor.next;
    if (anchor.next !== null) anchor.next.prev = slot;
    else cache.lruTail = slot;
    anchor.next = slot;
  }

  private unlink(cache: InstanceCache, slot: InstanceSlot): void {
    if (slot.prev !== null) slot.prev.next = slot.next;
    else if (cache.lruHead === slot) cache.lruHead = slot.next;
    if (slot.next !== null) slot.next.prev = slot.prev;
    else if (cache.lruTail === slot) cache.lruTail = slot.prev;
    slot.prev = null;
    slot.next = null;
  }
}

/** Whether two nodes hold the same state for every instance (then one node can stand for both). */
function sameState(parent: ClusterNode, child: ClusterNode): boolean {
  const sa = parent.data.slots;
  const sb = child.data.slots;
  if (sa.length !== sb.length || parent.data.windowTotal !== child.data.windowTotal) return false;
  for (const x of sa) {
    const y = findSlot(child, x.instance);
    if (
      y === undefined ||
      y.cached !== x.cached ||
      y.windowCount !== x.windowCount ||
      y.inflight !== x.inflight
    ) {
      return false;
    }
    // Merging keeps the child's LRU position: only if nothing was used between them is that exact.
    if (x.cached && x.inflight === 0 && x.prev !== y) return false;
  }
  return true;
}

/** A request routed after `time` went through the slot's node, or one in flight still pins it. */
function heldAfter(slot: InstanceSlot, time: number): boolean {
  return slot.inflight > 0 || slot.lastAccess > time;
}

export function findSlot(node: ClusterNode, instance: InstanceId): InstanceSlot | undefined {
  const slots = node.data.slots;
  for (let i = 0; i < slots.length; i++) if (slots[i]!.instance === instance) return slots[i];
  return undefined;
}

function comesAfter(a: InstanceSlot, b: InstanceSlot): boolean {
  for (let s = a.next; s !== null; s = s.next) if (s === b) return true;
  return false;
}
