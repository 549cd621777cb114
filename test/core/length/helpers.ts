import type { LengthQuery } from '../../../src/core/length/types.ts';
import { Random } from '../../../src/core/random.ts';

/** A query with a true output length (oracles read it). */
export function query(id: string, trueOutputTokens: number, promptTokens = 100, key?: string): LengthQuery {
  return { id, promptTokens, trueOutputTokens, ...(key === undefined ? {} : { key }) };
}

/** `n` queries with lognormal true lengths (median about 200), seeded. */
export function lognormalQueries(n: number, seed: number): LengthQuery[] {
  const random = new Random(seed);
  return Array.from({ length: n }, (_, i) =>
    query(`r${i}`, Math.max(1, Math.round(Math.exp(random.normal(Math.log(200), 1))))),
  );
}

/** Kendall's tau-a of two equally long series (ties count as neither concordant nor discordant). */
export function kendallTau(a: readonly number[], b: readonly number[]): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = i + 1; j < a.length; j++) sum += Math.sign(a[i]! - a[j]!) * Math.sign(b[i]! - b[j]!);
  }
  return sum / ((a.length * (a.length - 1)) / 2);
}
