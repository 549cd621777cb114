import type { ClusterNode } from '../../cluster-tree.ts';

/**
 * The key portion of a request (paper, Appendix A): the deepest node on its path that has more
 * tokens than all its predecessors together. The first node always qualifies, so one exists for
 * any non-empty prompt. Walking up from the leaf, the first qualifying node is the deepest.
 */
export function keyPortionOf(leaf: ClusterNode | null): ClusterNode | null {
  for (let n = leaf; n !== null && n.parent !== null; n = n.parent) {
    if (n.length > n.prefixLen) return n;
  }
  return null;
}
