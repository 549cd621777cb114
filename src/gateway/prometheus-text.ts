/**
 * Values of the named metrics in a Prometheus text exposition, summed over label sets (a replica
 * labels its gauges by model). Comments and other metrics are skipped.
 */
export function metricValues(text: string, names: readonly string[]): Map<string, number> {
  const wanted = new Set(names);
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.length === 0 || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.lastIndexOf(' ');
    if (space < 0) continue;
    const name = line.slice(0, brace >= 0 && brace < space ? brace : space);
    if (!wanted.has(name)) continue;
    const value = Number(line.slice(space + 1));
    if (Number.isFinite(value)) out.set(name, (out.get(name) ?? 0) + value);
  }
  return out;
}
