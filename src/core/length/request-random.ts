import { fmix32 } from '../hash.ts';
import { Random } from '../random.ts';

/**
 * A random stream of one request under one seed: a request's noise does not depend on which other
 * requests were predicted before it, or in what order (a re-run of one request draws the same).
 */
export function requestRandom(seed: number, id: string): Random {
  let h = fmix32(seed >>> 0);
  for (let i = 0; i < id.length; i++) h = fmix32(h ^ Math.imul(id.charCodeAt(i) + 1, 0x9e3779b1));
  return new Random(h | 0);
}
