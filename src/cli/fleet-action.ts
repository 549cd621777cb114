import type { Role } from '../core/types.ts';
import type { SimFleetAction } from '../sim/run.ts';
import { fleetFromFlag } from './fleet-file.ts';

const ROLES: readonly Role[] = ['mixed', 'prefill', 'decode'];
const ROLE_OF_LETTER: Readonly<Record<string, Role>> = { P: 'prefill', D: 'decode', M: 'mixed' };
const USAGE =
  "expected at=SECONDS with one of add=COUNTS (e.g. 1P, 2D1M: --fleet's shorthand), drain=ID, remove=ID, role=ID:ROLE (mixed, prefill, decode)";

/**
 * One `--fleet-action` value (docs/fleets.md, "Fleet actions"): `at=60,add=1P` adds a prefill
 * instance of `model` at 60 s (`add` takes --fleet's shorthand, so `add=2D` adds two), `at=60,drain=3`,
 * `at=90,remove=3`, `at=30,role=2:mixed`. Errors are one line naming the flag and the value.
 */
export function parseFleetAction(value: string, model: string): SimFleetAction[] {
  const fail = (why: string): never => {
    throw new Error(`--fleet-action '${value}': ${why}`);
  };
  const fields = new Map<string, string>();
  for (const part of value.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) fail(USAGE);
    const key = part.slice(0, eq).trim();
    if (fields.has(key)) fail(`'${key}' given twice`);
    fields.set(key, part.slice(eq + 1).trim());
  }
  const atText = fields.get('at') ?? fail(USAGE);
  const at = Number(atText);
  if (atText === '' || !Number.isFinite(at) || at < 0) fail(`at: expected seconds >= 0, got '${atText}'`);
  fields.delete('at');
  if (fields.size !== 1) fail(USAGE);
  const [[action, arg]] = [...fields] as [[string, string]];
  const id = (text: string): number => {
    if (!/^\d+$/.test(text)) fail(`${action}: expected an instance id, got '${text}'`);
    return Number(text);
  };
  switch (action) {
    case 'add': {
      // --fleet's shorthand, each group alone (an added decode instance needs no prefill one with it).
      if (!/^(?:\d+[PDMpdm])+$/.test(arg)) fail(`add: expected counts with P, D or M, e.g. 1P; got '${arg}'`);
      return [...arg.matchAll(/(\d+)([PDMpdm])/g)].flatMap(([, count, letter]) =>
        fleetFromFlag(`${count}M`, model).instances.map((mixed) => ({
          at,
          action: 'add' as const,
          spec: { ...mixed, role: ROLE_OF_LETTER[letter!.toUpperCase()]! },
        })),
      );
    }
    case 'drain':
    case 'remove':
      return [{ at, action, instance: id(arg) }];
    case 'role': {
      const [instance = '', role = ''] = arg.split(':');
      if (!ROLES.includes(role as Role)) fail(`role: expected ID:ROLE with ROLE one of ${ROLES.join(', ')}`);
      return [{ at, action: 'role', instance: id(instance), role: role as Role }];
    }
    default:
      return fail(USAGE);
  }
}
