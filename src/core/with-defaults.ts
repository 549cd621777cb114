/**
 * Options over defaults, where an option given as `undefined` keeps its default (a plain spread
 * would overwrite the default with undefined, e.g. for `{ seed: context.seed }`).
 */
export function withDefaults<T extends object>(defaults: Required<T>, options: T): Required<T> {
  const merged = { ...defaults };
  for (const key of Object.keys(options) as (keyof T)[]) {
    const value = options[key];
    if (value !== undefined) merged[key] = value as Required<T>[keyof T];
  }
  return merged;
}
