import type { Tokens } from '../core/types.ts';
import type { WorkloadRequest } from './types.ts';

/**
 * Table 1 statistics of a request set, measured from the prompts alone by sorting them and comparing
 * neighbours: no radix tree, so that it can check the one the schedulers use.
 *
 * Definitions (the prefix tree is the compressed trie of all prompts in the set, as if the cache were
 * infinite; a node ends wherever some prompt diverges from, or ends on, the path):
 * - shared prefix of a prompt: the longest prefix it has in common with at least one OTHER prompt of
 *   the set (an identical prompt counts); reported as a share of the prompt's length.
 * - path nodes of a prompt: split at every depth d in {LCP(p, q) : q another prompt, d > 0} and at the
 *   prompt's length, so node j covers tokens (d_{j-1}, d_j] with d_0 = 0.
 * - key portion (the paper's definition): the deepest path node with more tokens than all the nodes
 *   before it together, i.e. d_j - d_{j-1} > d_{j-1}. The first node always qualifies. Reported as its
 *   length over the prompt's length.
 * - requests sharing the key portion: prompts whose path contains the whole key node, that is with
 *   LCP(p, q) >= d_j, the prompt itself included (1 for an unshared prompt).
 * Every statistic is the mean and population standard deviation over requests (each request weighs
 * the same); `requestsPerKeyPortion` is the same count averaged over distinct key nodes instead.
 */
export interface MeanStd {
  readonly mean: number;
  readonly std: number;
}

export interface PrefixSharing {
  readonly promptLength: number;
  /** Tokens of the longest prefix shared with another prompt. */
  readonly sharedPrefix: number;
  /** The key portion covers tokens [keyStart, keyEnd) of the prompt. */
  readonly keyStart: number;
  readonly keyEnd: number;
  /** Prompts (this one included) that contain the whole key portion at the same place. */
  readonly requestsSharingKey: number;
  /** Identifies the key node: equal for prompts sharing the same key portion. */
  readonly keyNode: string;
}

export interface WorkloadStats {
  readonly requests: number;
  readonly promptLength: MeanStd;
  readonly outputLength: MeanStd;
  /** Fractions in [0, 1]. */
  readonly sharedPrefixShare: MeanStd;
  readonly keyPortionShare: MeanStd;
  readonly requestsSharingKeyPortion: MeanStd;
  readonly keyPortions: number;
  readonly requestsPerKeyPortion: MeanStd;
}

export function meanStd(values: readonly number[]): MeanStd {
  if (values.length === 0) return { mean: Number.NaN, std: Number.NaN };
  let sum = 0;
  for (const v of values) sum += v;
  const mean = sum / values.length;
  let squares = 0;
  for (const v of values) squares += (v - mean) * (v - mean);
  return { mean, std: Math.sqrt(squares / values.length) };
}

/** Lexicographic order of token strings (a prefix first). */
export function compareTokens(a: Tokens, b: Tokens): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** Length of the longest common prefix. */
export function commonPrefix(a: Tokens, b: Tokens): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Per-prompt sharing, in input order. In lexicographic order the LCP of two prompts is the minimum of
 * the neighbour LCPs between them, so each prompt's distinct LCP values with all others lie on the
 * chain of ever-smaller neighbour LCPs to its left and to its right ("previous/next smaller").
 */
export function analyzePrefixSharing(prompts: readonly Tokens[]): PrefixSharing[] {
  const n = prompts.length;
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) =>
    compareTokens(prompts[a]!, prompts[b]!),
  );
  // between[k] = LCP of sorted prompts k-1 and k; -1 sentinels at both ends stop every chain.
  const between = new Int32Array(n + 1);
  between[0] = -1;
  between[n] = -1;
  for (let k = 1; k < n; k++) between[k] = commonPrefix(prompts[order[k - 1]!]!, prompts[order[k]!]!);
  const previousSmaller = new Int32Array(n + 1);
  // Equal values pop too, so nextSmaller[k] is the next value <= between[k]; the right-hand walk
  // below keeps only the strict decreases.
  const nextSmaller = new Int32Array(n + 1).fill(n);
  const stack: number[] = [0];
  for (let k = 1; k < n; k++) {
    while (between[stack[stack.length - 1]!]! >= between[k]!) nextSmaller[stack.pop()!] = k;
    previousSmaller[k] = stack[stack.length - 1]!;
    stack.push(k);
  }
  const result = new Array<PrefixSharing>(n);
  for (let i = 0; i < n; i++) {
    result[order[i]!] = sharingAt(i, prompts[order[i]!]!.length, between, previousSmaller, nextSmaller);
  }
  return result;
}

function sharingAt(
  i: number,
  length: number,
  between: Int32Array,
  previousSmaller: Int32Array,
  nextSmaller: Int32Array,
): PrefixSharing {
  if (length === 0) {
    return {
      promptLength: 0,
      sharedPrefix: 0,
      keyStart: 0,
      keyEnd: 0,
      requestsSharingKey: 1,
      keyNode: `empty:${i}`,
    };
  }
  // Chains of strictly decreasing LCP values, each ending at a position whose value is <= 0.
  const left: number[] = [];
  for (let k = i; ; k = previousSmaller[k]!) {
    left.push(k);
    if (between[k]! <= 0) break;
  }
  const right: number[] = [];
  for (let k = i + 1, last = Number.POSITIVE_INFINITY; ; k = nextSmaller[k]!) {
    if (between[k]! < last) {
      right.push(k);
      last = between[k]!;
    }
    if (between[k]! <= 0) break;
  }
  const depths = new Set<number>([length]);
  for (const k of [...left, ...right]) if (between[k]! > 0) depths.add(between[k]!);
  const boundaries = [...depths].sort((a, b) => a - b);
  let keyStart = 0;
  let keyEnd = length;
  let previous = 0;
  for (const boundary of boundaries) {
    if (boundary - previous > previous) {
      keyStart = previous;
      keyEnd = boundary;
    }
    previous = boundary;
  }
  const firstLeft = left.find((k) => between[k]! < keyEnd)!;
  const firstRight = right.find((k) => between[k]! < keyEnd)!;
  return {
    promptLength: length,
    sharedPrefix: Math.max(0, between[i]!, between[i + 1]!),
    keyStart,
    keyEnd,
    requestsSharingKey: 1 + (i - firstLeft) + (firstRight - (i + 1)),
    keyNode: `${firstLeft}:${keyEnd}`,
  };
}

/**
 * Table 1's statistics of a request set (see the definitions above). Holds every prompt in memory;
 * O(n log n) comparisons plus, per prompt, the depth of its path.
 */
export function measureWorkload(
  requests: Iterable<Pick<WorkloadRequest, 'tokens' | 'outputTokens'>>,
): WorkloadStats {
  const prompts: Tokens[] = [];
  const outputs: number[] = [];
  for (const request of requests) {
    prompts.push(request.tokens);
    outputs.push(request.outputTokens);
  }
  const sharing = analyzePrefixSharing(prompts);
  const share = (part: number, whole: number) => (whole === 0 ? 0 : part / whole);
  const perKeyNode = new Map<string, number>();
  for (const s of sharing) perKeyNode.set(s.keyNode, s.requestsSharingKey);
  return {
    requests: prompts.length,
    promptLength: meanStd(prompts.map((p) => p.length)),
    outputLength: meanStd(outputs),
    sharedPrefixShare: meanStd(sharing.map((s) => share(s.sharedPrefix, s.promptLength))),
    keyPortionShare: meanStd(sharing.map((s) => share(s.keyEnd - s.keyStart, s.promptLength))),
    requestsSharingKeyPortion: meanStd(sharing.map((s) => s.requestsSharingKey)),
    keyPortions: perKeyNode.size,
    requestsPerKeyPortion: meanStd([...perKeyNode.values()]),
  };
}
