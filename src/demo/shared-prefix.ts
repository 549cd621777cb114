import { Random } from '../core/random.ts';
import type { WorkloadRequest } from '../workloads/types.ts';

export interface SharedPrefixOptions {
  readonly requests: number;
  /** Distinct shared prefixes (system prompts, documents). */
  readonly prefixes: number;
  readonly prefixChars: number;
  readonly suffixChars: number;
  readonly outputTokens: number;
  /** Poisson arrivals, requests per second. */
  readonly rps: number;
  readonly seed: number;
}

const PRINTABLE_FIRST = 33; // '!'
const PRINTABLE_COUNT = 94; // '!'..'~'

/**
 * Requests of printable ASCII (one token per character in the character-level GGUF models and in the
 * gateway's `chars` tokenizer alike): each picks one of a few long shared prefixes and adds a unique
 * suffix. Tokens are the characters' codes, so the same request list drives the simulator.
 */
export function sharedPrefixRequests(options: SharedPrefixOptions): WorkloadRequest[] {
  const random = new Random(options.seed);
  const text = (n: number) => {
    const out = new Uint32Array(n);
    for (let i = 0; i < n; i++) out[i] = PRINTABLE_FIRST + random.int(0, PRINTABLE_COUNT - 1);
    return out;
  };
  const prefixes = Array.from({ length: options.prefixes }, () => text(options.prefixChars));
  const out: WorkloadRequest[] = [];
  let arrival = 0;
  for (let i = 0; i < options.requests; i++) {
    const prefix = prefixes[random.int(0, prefixes.length - 1)]!;
    const tokens = new Uint32Array(options.prefixChars + options.suffixChars);
    tokens.set(prefix);
    tokens.set(text(options.suffixChars), options.prefixChars);
    out.push({
      id: `sp-${i}`,
      arrival,
      tokens,
      outputTokens: options.outputTokens,
      workload: 'shared-prefix',
    });
    arrival += random.exponential(options.rps);
  }
  return out;
}
