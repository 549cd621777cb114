/**
 * The provisioners, by name (one row each, as the policy registry): `preble sim --provisioner
 * NAME[:OPTION=VALUE,...]` parses here, each value typed by its default.
 */
import { describeWithDefaults, optionFromText, withDefaults } from '../with-defaults.ts';
import { AladdinProvisioner, aladdinProvisionerDefaults } from './aladdin.ts';
import type { Provisioner } from './types.ts';

interface ProvisionerEntry<O extends object> {
  readonly summary: string;
  readonly defaults: O;
  readonly create: (options: O) => Provisioner;
}

function entry<O extends object>(row: ProvisionerEntry<O>): ProvisionerEntry<O> {
  return row;
}

const PROVISIONERS = {
  aladdin: entry({
    summary:
      "Aladdin (seed 004, Eq. 7): at each heartbeat, workers = ceil(k5 x arrival rate + c5), the line learned online from the placement's own worker count (or given); adds what is missing, removes the emptiest past it",
    defaults: aladdinProvisionerDefaults,
    create: (o) => new AladdinProvisioner(o),
  }),
} as const;

export type ProvisionerName = keyof typeof PROVISIONERS;
export const provisionerNames = Object.keys(PROVISIONERS) as ProvisionerName[];

/** A provisioner named with its options: what `--provisioner` parses to. */
export interface ProvisionerChoice {
  readonly name: ProvisionerName;
  readonly options: Readonly<Record<string, unknown>>;
}

function row(name: string): ProvisionerEntry<Record<string, unknown>> {
  if (!Object.hasOwn(PROVISIONERS, name))
    throw new Error(`unknown provisioner '${name}'; valid: ${provisionerNames.join(', ')}`);
  return PROVISIONERS[name as ProvisionerName] as unknown as ProvisionerEntry<Record<string, unknown>>;
}

/** `aladdin` or `aladdin:heartbeatSeconds=5,role=decode`; one line naming what is wrong. */
export function parseProvisioner(text: string): ProvisionerChoice {
  const [name = '', rest] = text.split(/:(.*)/s);
  const defaults = row(name.trim()).defaults;
  const options: Record<string, unknown> = {};
  for (const part of rest === undefined || rest.trim() === '' ? [] : rest.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, Math.max(0, eq)).trim();
    const raw = part.slice(eq + 1).trim();
    if (eq <= 0) throw new Error(`--provisioner ${text}: expected OPTION=VALUE, got '${part}'`);
    if (!Object.hasOwn(defaults, key))
      throw new Error(
        `unknown ${name} provisioner option '${key}'; valid: ${Object.keys(defaults).join(', ')}`,
      );
    const value = optionFromText(`${name} provisioner option`, key, raw, defaults);
    // A provisioner's numbers are periods, rates and counts: finite.
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new Error(`${name} provisioner option '${key}' must be a number, got '${raw}'`);
    options[key] = value;
  }
  return { name: name.trim() as ProvisionerName, options };
}

export function createProvisioner(choice: ProvisionerChoice): Provisioner {
  const r = row(choice.name);
  return r.create(withDefaults(r.defaults, choice.options));
}

/** One line per provisioner with its options, for `--help`. */
export function describeProvisioners(): string[] {
  return provisionerNames.map((name) =>
    describeWithDefaults(name, PROVISIONERS[name].summary, PROVISIONERS[name].defaults),
  );
}
