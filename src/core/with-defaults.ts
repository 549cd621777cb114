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

/** A registry row as one `--help` line: `name: summary [option=default, ...]`. */
export function describeWithDefaults(name: string, summary: string, defaults: object): string {
  const options = Object.entries(defaults).map(([k, v]) => `${k}=${String(v)}`);
  return `${name}: ${summary}${options.length === 0 ? '' : ` [${options.join(', ')}]`}`;
}
