import type { Tokens } from '../core/types.ts';
import { commonPrefix, compareTokens } from './stats.ts';
import type { WorkloadRequest } from './types.ts';

/** How much reusable prefix a stream keeps alive at once, in tokens. */
export interface WorkingSet {
  /**
   * Time-averaged live shared-prefix tokens: a prefix shared by two or more prompts is live from the
   * first arrival that uses it to the last; its tokens count once (a trie node) while it is live. This
   * is what one cache must hold at once to miss none of the stream's reuse.
   */
  readonly meanTokens: number;
  /** The most live shared-prefix tokens at any instant. */
  readonly peakTokens: number;
  /** Every shared-prefix token of the stream, live or not (the trie of shared prefixes). */
  readonly distinctSharedTokens: number;
}

/**
 * The stream's shared-prefix working set. Prompts are sorted; every maximal run of neighbours sharing
 * at least d tokens is one node of the trie of shared prefixes (an "LCP interval"), holding the tokens
 * between its parent's depth and its own, used by the run's prompts, so live from their earliest
 * arrival to their latest. Holds every prompt in memory; O(n log n) comparisons.
 */
export function workingSet(requests: Iterable<Pick<WorkloadRequest, 'tokens' | 'arrival'>>): WorkingSet {
  const prompts: Tokens[] = [];
  const arrivals: number[] = [];
  for (const r of requests) {
    prompts.push(r.tokens);
    arrivals.push(r.arrival);
  }
  const n = prompts.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) =>
    compareTokens(prompts[a]!, prompts[b]!),
  );
  // Nodes: tokens, first and last use.
  const nodes: [number, number, number][] = [];
  interface Open {
    depth: number;
    first: number;
    last: number;
  }
  const stack: Open[] = [{ depth: 0, first: Number.POSITIVE_INFINITY, last: Number.NEGATIVE_INFINITY }];
  for (let k = 0; k < n; k++) {
    const next = k + 1 < n ? commonPrefix(prompts[order[k]!]!, prompts[order[k + 1]!]!) : 0;
    let first = arrivals[order[k]!]!;
    let last = first;
    while (stack[stack.length - 1]!.depth > next) {
      const node = stack.pop()!;
      node.first = Math.min(node.first, first);
      node.last = Math.max(node.last, last);
      const parent = Math.max(next, stack[stack.length - 1]!.depth);
      nodes.push([node.depth - parent, node.first, node.last]);
      first = node.first;
      last = node.last;
    }
    const top = stack[stack.length - 1]!;
    if (top.depth < next) stack.push({ depth: next, first, last });
    else {
      top.first = Math.min(top.first, first);
      top.last = Math.max(top.last, last);
    }
  }
  let distinct = 0;
  const events: [number, number][] = [];
  for (const [tokens, first, last] of nodes) {
    distinct += tokens;
    events.push([first, tokens], [last, -tokens]);
  }
  // Starts before ends at one instant, so a prefix reused at once still counts.
  events.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let live = 0;
  let peak = 0;
  let area = 0;
  let previous = events.length > 0 ? events[0]![0] : 0;
  for (const [time, delta] of events) {
    area += live * (time - previous);
    previous = time;
    live += delta;
    peak = Math.max(peak, live);
  }
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const a of arrivals) {
    start = Math.min(start, a);
    end = Math.max(end, a);
  }
  const span = end - start;
  return { meanTokens: span > 0 ? area / span : peak, peakTokens: peak, distinctSharedTokens: distinct };
}
