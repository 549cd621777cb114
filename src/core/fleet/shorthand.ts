/**
 * The `--fleet` shorthand: counts of prefill (P), decode (D) and mixed (M) instances of the run's model,
 * e.g. `2P1D` (2 prefill + 1 decode), `4M`, `2P2D1M`. Instances are numbered in the order written.
 */
import type { Role } from '../types.ts';
import { type FleetConfig, FleetSpecError, parseFleetConfig } from './spec.ts';

const SHORTHAND = /^(?:\d+[A-Za-z])+$/;
const ROLE_OF_LETTER: Readonly<Record<string, Role>> = { P: 'prefill', D: 'decode', M: 'mixed' };

/** Whether `text` has the shorthand's shape (counts followed by letters), right or wrong letters alike. */
export function looksLikeFleetShorthand(text: string): boolean {
  return SHORTHAND.test(text);
}

/**
 * `2P1D` as a fleet of `model` (a cost-model preset or roofline name) with every other field at its
 * default. Throws one line without the flag's name (the caller prefixes `--fleet: `).
 */
export function parseFleetShorthand(text: string, model: string): FleetConfig {
  const expected = `expected counts with P, D or M, e.g. 2P1D; got '${text}'`;
  if (!SHORTHAND.test(text)) throw new FleetSpecError('', expected);
  const specs: { role: Role; count: number; model: string }[] = [];
  const seen = new Set<string>();
  for (const [, digits, rawLetter] of text.matchAll(/(\d+)([A-Za-z])/g)) {
    const letter = rawLetter!.toUpperCase();
    const role = ROLE_OF_LETTER[letter];
    if (role === undefined) throw new FleetSpecError('', expected);
    if (seen.has(letter)) throw new FleetSpecError('', `${letter} given twice in '${text}'`);
    seen.add(letter);
    const count = Number(digits);
    if (count === 0)
      throw new FleetSpecError('', `a count must be at least 1; got ${digits}${letter} in '${text}'`);
    specs.push({ role, count, model });
  }
  if (seen.has('P') !== seen.has('D'))
    throw new FleetSpecError('', `prefill (P) and decode (D) instances come together; got '${text}'`);
  return parseFleetConfig({ instances: specs });
}
