/**
 * Options over defaults, where an option given as `undefined` keeps its default (a plain spread
 * would overwrite the default with undefined, e.g. for `{ seed: context.seed }`). The one defaults
 * idiom of every plugin (global policies, queue policies): the registries' tests hold each to it.
 */
export function withDefaults<D extends object>(
  defaults: D,
  options: { readonly [K in keyof D]?: D[K] | undefined },
): D {
  const merged = { ...defaults };
  for (const key of Object.keys(options) as (keyof D)[]) {
    if (!(key in defaults)) continue;
    const value = options[key];
    if (value !== undefined) merged[key] = value as D[keyof D];
  }
  return merged;
}

/**
 * `OWNER.OPTION=VALUE` (`--policy-option`, `--queue-policy-option`) split into its parts; `shape` names
 * the form in the one-line error, e.g. "POLICY.OPTION=VALUE".
 */
export function splitDottedOption(
  flag: string,
  shape: string,
  text: string,
): { owner: string; key: string; raw: string } {
  const match = /^([a-z0-9-]+)\.([A-Za-z0-9]+)=(.*)$/.exec(text);
  if (match === null) throw new Error(`${flag}: expected ${shape}, got '${text}'`);
  const [, owner, key, raw] = match as unknown as [string, string, string, string];
  return { owner, key, raw };
}

/**
 * An option's value from command-line text, typed by its default: numbers (`Infinity` included),
 * `true` / `false`, else the text. `what` names the option's owner in the error, e.g. "e2 option".
 */
export function optionFromText(what: string, key: string, raw: string, defaults: object): unknown {
  const kind = typeof (defaults as Record<string, unknown>)[key];
  if (kind === 'number') {
    const value = Number(raw);
    if (raw.trim() === '' || Number.isNaN(value))
      throw new Error(`${what} '${key}' must be a number, got '${raw}'`);
    return value;
  }
  if (kind === 'boolean') {
    if (raw !== 'true' && raw !== 'false')
      throw new Error(`${what} '${key}' must be true or false, got '${raw}'`);
    return raw === 'true';
  }
  return raw;
}

/** A registry row as one `--help` line: `name: summary [option=default, ...]`. */
export function describeWithDefaults(name: string, summary: string, defaults: object): string {
  const options = Object.entries(defaults).map(([k, v]) => `${k}=${String(v)}`);
  return `${name}: ${summary}${options.length === 0 ? '' : ` [${options.join(', ')}]`}`;
}
