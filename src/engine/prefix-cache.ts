import { type RadixNode, RadixTree } from '../core/radix-tree.ts';
import type { Tokens } from '../core/types.ts';
import { type LruLinks, LruList } from './lru-list.ts';
import type { EngineEviction } from './types.ts';

/** Per-node state of an engine's prefix cache. */
export interface CacheData extends LruLinks<CacheNode> {
  /** Running requests whose pinned path contains this node. */
  refs: number;
  /** Seconds: when the node was last pinned or released. */
  lastAccess: number;
  /** Once evicted: the node that kept the path above it (its parent), so old matches resume there. */
  forward: CacheNode | null;
}

export type CacheNode = RadixNode<CacheData>;

/**
 * Where a waiting request's prompt last matched the cache: `node` is the deepest matched node (the
 * match may end inside it) and `matched` the matched length. Valid as of the tree's `version`;
 * `PrefixCache.match` resumes from it, so re-matching a waiting request costs O(1) unless the cache
 * grew along its prompt (then only the new tokens are compared); if its node was evicted, it resumes
 * from the node that kept the path above it (`CacheData.forward`).
 */
export interface MatchCursor {
  node: CacheNode;
  matched: number;
  version: number;
}

/** A mutable eviction event: a later victim that is the parent of this one widens it. */
interface PendingEviction {
  readonly path: Tokens;
  keptTokens: number;
}

/**
 * An engine's KV prefix cache: a radix tree over token ids (SGLang's RadixCache) whose nodes are
 * KV tokens held in memory.
 *
 * - Pinning: a running request pins the path from the root to its deepest cached node (`refs` on
 *   every node of the path), so `refs(parent) >= refs(child)` and the unreferenced nodes are whole
 *   subtrees. Pinned nodes are never evicted.
 * - LRU: exactly the unreferenced nodes sit in one list, least recently used first. A released path
 *   joins the tail leaf first, and a split puts the new head right after its tail, so every node comes
 *   after all its descendants: the list head is always an unreferenced leaf, the next victim, found in
 *   O(1) without scanning the tree.
 * - Eviction takes victims from the head; the last one may be evicted in part (its tail), keeping
 *   the head. Nodes are never merged back (SGLang does not either): a split stays until evicted.
 */
export class PrefixCache {
  readonly tree: RadixTree<CacheData>;
  private readonly lru = new LruList<CacheNode>();
  /** Tokens held by tree nodes. */
  tokens = 0;
  /** Tokens of unreferenced nodes (what eviction can free). */
  evictableTokens = 0;
  /** Seconds, stamped on nodes as they are pinned and released. */
  now = 0;
  /** Tokens the last `extend` added to the tree (the rest of its range was already cached). */
  lastAdded = 0;
  /** The token path of `pathAnchor` is `pathBuffer[0..pathAnchor.endLen)`: successive evictions up one
   * chain (decode growth nibbling at the same prefix) reuse it instead of copying the path again. */
  private pathBuffer: Tokens = new Uint32Array(0);
  private pathAnchor: CacheNode | null = null;

  constructor() {
    this.tree = new RadixTree<CacheData>({
      create: () => ({ refs: 0, lastAccess: this.now, forward: null, prev: null, next: null, inLru: false }),
      split: (head, tail) => {
        // Everything pinning the tail passes through its new parent; token counts are unchanged.
        head.data.refs = tail.data.refs;
        head.data.lastAccess = tail.data.lastAccess;
        if (tail.data.inLru) this.lru.insertAfter(tail, head);
      },
    });
  }

  get root(): CacheNode {
    return this.tree.root;
  }

  /** Tokens pinned by running requests. */
  get pinnedTokens(): number {
    return this.tokens - this.evictableTokens;
  }

  newCursor(): MatchCursor {
    return { node: this.tree.root, matched: 0, version: -1 };
  }

  /** Length of the longest prefix of `seq` in the cache, resuming from (and updating) `cursor`. */
  match(cursor: MatchCursor, seq: Tokens): number {
    if (cursor.version === this.tree.version) return cursor.matched;
    const root = this.tree.root;
    let node = cursor.node;
    let m = cursor.matched;
    // Evicted since: the match now ends where the path above the evicted part does.
    while (node !== root && node.parent === null) {
      const kept = node.data.forward;
      if (kept === null) throw new Error('prefix cache: a match cursor points at a node that left the tree');
      node = kept;
      if (m > node.endLen) m = node.endLen;
    }
    // Splits create new parents: climb to the node whose range holds the match's end.
    while (node !== root && m <= node.prefixLen) node = node.parent!;
    // Continue the match: O(1) when nothing was added where it stopped, else the new tokens only.
    for (;;) {
      if (m < node.endLen) {
        const tokens = node.tokens;
        const start = m - node.prefixLen;
        const k = start + sameRun(tokens, start, seq, m);
        m += k - start;
        if (k < tokens.length) break;
      }
      if (m >= seq.length) break;
      const child = node.children?.get(seq[m]!);
      if (child === undefined) break;
      node = child;
    }
    cursor.node = node;
    cursor.matched = m;
    cursor.version = this.tree.version;
    return m;
  }

  /**
   * Pin the match `cursor` holds (taken by `match` just before): a node matched in part is split so
   * the pin covers exactly the match. Returns the deepest pinned node (the root for an empty match).
   */
  pinMatch(cursor: MatchCursor): CacheNode {
    let node = cursor.node;
    if (node !== this.tree.root && cursor.matched < node.endLen) {
      node = this.tree.splitAt(node, cursor.matched - node.prefixLen);
      cursor.node = node;
      cursor.version = this.tree.version;
    }
    for (let n = node; n !== this.tree.root; n = n.parent!) this.pinNode(n);
    return node;
  }

  /** Release a pin taken by `pinMatch`/`extend`: the path from `node` to the root. */
  unpin(node: CacheNode): void {
    const root = this.tree.root;
    for (let n = node; n !== root; n = n.parent!) {
      const d = n.data;
      if (d.refs <= 0) throw new Error('prefix cache: unpinning a node that is not pinned');
      if (--d.refs === 0) {
        // Leaf first: a node joins the LRU tail before its ancestors, so it is evicted before them.
        d.lastAccess = this.now;
        this.lru.append(n);
        this.evictableTokens += n.length;
      }
    }
  }

  /**
   * Make the sequence's tokens up to position `to` cached below `from`, a pinned node on its path
   * (`from.endLen <= to`), reusing what is already there (splitting a node matched in part) and
   * adding one leaf for the rest, and extend the pin down to the returned node, which ends exactly
   * at `to`. `seq` holds the sequence from position `base` on (`base <= from.endLen`), so a caller
   * need not rebuild what lies above `from`. Sets `lastAdded`. Costs O(new nodes + tokens compared),
   * never a walk from the root.
   */
  extend(from: CacheNode, seq: Tokens, to: number, base = 0): CacheNode {
    let node = from;
    let pos = from.endLen;
    if (pos < base || to - base > seq.length)
      throw new Error('prefix cache: extend outside the given tokens');
    this.lastAdded = 0;
    while (pos < to) {
      const child = node.children?.get(seq[pos - base]!);
      if (child === undefined) {
        // insertMatched adds `tokens[matched..]` as a child of the match's last node and reads
        // nothing else of the match: handing it only that node avoids walking from the root.
        const path = this.tree.insertMatched(seq.subarray(0, to - base), {
          path: node === this.tree.root ? [] : [node],
          matched: pos - base,
          lastNodeMatched: node.length,
        });
        node = path[path.length - 1]!;
        this.tokens += to - pos;
        this.lastAdded = to - pos;
        this.pinNode(node);
        break;
      }
      const k = commonLength(child.tokens, seq, pos - base, to - base);
      node = k < child.length ? this.tree.splitAt(child, k) : child;
      this.pinNode(node);
      pos += k;
    }
    return node;
  }

  /**
   * Evict at least `tokens` tokens (fewer only if less is evictable), least recently used first, the
   * last victim in part; appends the events to `out`. Returns the tokens evicted.
   */
  evict(tokens: number, out: EngineEviction[]): number {
    let evicted = 0;
    let pending: PendingEviction | null = null;
    let pendingParent: CacheNode | null = null;
    while (evicted < tokens) {
      const victim = this.lru.head;
      if (victim === null) break;
      if (victim.data.refs !== 0 || victim.childCount !== 0) {
        throw new Error('prefix cache: LRU head is not an unreferenced leaf');
      }
      const want = tokens - evicted;
      // Keep the head, evict the tail: the split leaves `victim` as the tail, `want` tokens long.
      const partial = victim.length > want;
      if (partial) this.tree.splitAt(victim, victim.length - want);
      if (pending !== null && pendingParent === victim) {
        // The parent of the last victim: one event covers both.
        pending.keptTokens = victim.prefixLen;
      } else {
        pending = { path: this.evictedPath(victim), keptTokens: victim.prefixLen };
        out.push(pending);
      }
      const kept: CacheNode = victim.parent!;
      pendingParent = partial ? null : kept;
      this.pathAnchor = kept === this.tree.root ? null : kept;
      victim.data.forward = kept;
      this.lru.remove(victim);
      this.evictableTokens -= victim.length;
      this.tokens -= victim.length;
      evicted += victim.length;
      this.tree.removeLeaf(victim);
    }
    return evicted;
  }

  /** Token ids from the root to the end of `node`, in a fresh array. */
  pathTo(node: CacheNode): Tokens {
    const path = new Uint32Array(node.endLen);
    for (let n = node; n !== this.tree.root; n = n.parent!) path.set(n.tokens, n.prefixLen);
    return path;
  }

  /** `pathTo` for a victim, reusing the last victim's path when this one lies above it. */
  private evictedPath(victim: CacheNode): Tokens {
    const anchor = this.pathAnchor;
    // A node's path never changes while it is in the tree (a split keeps the object as the tail).
    if (anchor === victim && anchor.parent !== null) return this.pathBuffer.subarray(0, victim.endLen);
    this.pathBuffer = this.pathTo(victim);
    return this.pathBuffer;
  }

  /** Unreferenced nodes, least recently used first (tests). */
  lruNodes(): CacheNode[] {
    return [...this.lru.values()];
  }

  /**
   * Consistency check for tests: token counters, refs against `expectedRefs` (node -> pins, from the
   * running requests; absent = 0), refs monotone along paths, LRU membership and order. Throws.
   */
  check(expectedRefs: ReadonlyMap<CacheNode, number>): void {
    let tokens = 0;
    let evictable = 0;
    const position = new Map<CacheNode, number>();
    let index = 0;
    for (const n of this.lru.values()) position.set(n, index++);
    if (index !== this.lru.size) throw new Error('prefix cache: LRU size mismatch');
    for (const n of this.tree.nodesDepthFirst()) {
      tokens += n.length;
      const d = n.data;
      const expected = expectedRefs.get(n) ?? 0;
      if (d.refs !== expected) throw new Error(`prefix cache: node refs ${d.refs}, expected ${expected}`);
      if (n.length === 0) throw new Error('prefix cache: empty node');
      const parent = n.parent!;
      if (parent !== this.tree.root && parent.data.refs < d.refs) {
        throw new Error('prefix cache: a node has more pins than its parent');
      }
      if ((d.refs === 0) !== d.inLru) throw new Error('prefix cache: LRU membership differs from refs === 0');
      if (d.inLru) {
        evictable += n.length;
        if (parent !== this.tree.root && parent.data.inLru && position.get(parent)! < position.get(n)!) {
          throw new Error('prefix cache: a parent precedes its child in the LRU list');
        }
      }
    }
    if (tokens !== this.tokens)
      throw new Error(`prefix cache: ${this.tokens} tokens counted, ${tokens} held`);
    if (evictable !== this.evictableTokens) {
      throw new Error(`prefix cache: ${this.evictableTokens} evictable counted, ${evictable} held`);
    }
    for (const n of expectedRefs.keys()) {
      if (n !== this.tree.root && n.parent === null)
        throw new Error('prefix cache: a pinned node left the tree');
    }
  }

  private pinNode(n: CacheNode): void {
    const d = n.data;
    if (d.refs++ === 0 && d.inLru) {
      this.lru.remove(n);
      this.evictableTokens -= n.length;
    }
    d.lastAccess = this.now;
  }
}

/** Length of the common run of `a[i..]` and `b[j..]` (four tokens per step while they agree). */
function sameRun(a: Tokens, i: number, b: Tokens, j: number): number {
  const max = Math.min(a.length - i, b.length - j);
  let k = 0;
  for (; k + 4 <= max; k += 4) {
    if (
      a[i + k] !== b[j + k] ||
      a[i + k + 1] !== b[j + k + 1] ||
      a[i + k + 2] !== b[j + k + 2] ||
      a[i + k + 3] !== b[j + k + 3]
    ) {
      break;
    }
  }
  while (k < max && a[i + k] === b[j + k]) k++;
  return k;
}

/** Length of the common prefix of `segment` and `seq[from..to)`; the first token is known to match. */
function commonLength(segment: Tokens, seq: Tokens, from: number, to: number): number {
  const max = Math.min(segment.length, to - from);
  let k = 1;
  while (k < max && segment[k] === seq[from + k]) k++;
  return k;
}
