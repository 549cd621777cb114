import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import { createGateway } from '../../src/gateway/server.ts';

const DASHBOARD = new URL('../../docs/grafana/preble-gateway.json', import.meta.url);

interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly datasource?: { readonly uid: string };
  readonly targets?: readonly { readonly expr: string; readonly datasource?: { readonly uid: string } }[];
  readonly panels?: readonly Panel[];
}
interface Variable {
  readonly name: string;
  readonly type: string;
  readonly query: unknown;
}
interface Dashboard {
  readonly uid: string;
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly Variable[] };
}

/** Grafana's reference to the dashboard's datasource variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a JS template
const DATASOURCE_UID = '${datasource}';

const KEYWORDS = new Set([
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'group_left',
  'group_right',
  'inf',
  'nan',
]);

/**
 * The metric names a PromQL expression selects (series names as scraped: `x_bucket`, not `x`).
 * Strings, label matchers, range and subquery brackets and by/without/on/ignoring/group_* label lists
 * are removed first; what is left that names no function (an identifier followed by `(`) and is no
 * keyword is a metric.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names: string[] = [];
  for (const m of bare.matchAll(/(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice(m.index + m[0].length);
    if (/^\s*\(/.test(after) || KEYWORDS.has(m[0].toLowerCase())) continue;
    names.push(m[0]);
  }
  return names;
}

function allPanels(panels: readonly Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
const panels = allPanels(dashboard.panels);
const queries = panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
const variableQueries = dashboard.templating.list
  .filter((v) => v.type === 'query')
  .map((v) => {
    const query = typeof v.query === 'string' ? v.query : (v.query as { query: string }).query;
    // label_values(METRIC, LABEL): the metric is the one to check.
    const m = /^label_values\(\s*([^,]+?)\s*,\s*\w+\s*\)$/.exec(query);
    assert.ok(m, `variable ${v.name}: ${query}`);
    return { panel: `variable ${v.name}`, expr: m[1]! };
  });

/** Every series name the gateway's registry exposes, mapped to the metric that exposes it. */
async function gatewaySeries(): Promise<Map<string, string>> {
  const costModel = costModelPreset('mistral-7b-a6000');
  // The dashboard's last row reads the process metrics `serve --process-metrics` adds.
  const gateway = createGateway({
    createPolicy: () => createGlobalPolicy('e2', { costModel }),
    replicas: [],
    replicaKvTokens: costModel.kvCapacityTokens,
    pollSeconds: 0,
    health: { intervalSeconds: 0 },
    logLevel: 'silent',
    processMetrics: true,
  });
  try {
    const series = new Map<string, string>();
    for (const metric of await gateway.metrics.registry.getMetricsAsJSON()) {
      // prom-client's typings call the type an enum; at run time it is the exposition's word.
      const type = String(metric.type);
      const suffixes =
        type === 'histogram'
          ? ['_bucket', '_sum', '_count']
          : type === 'summary'
            ? ['', '_sum', '_count']
            : [''];
      for (const s of suffixes) series.set(metric.name + s, metric.name);
    }
    return series;
  } finally {
    await gateway.close();
  }
}

test('metricNames finds the series an expression selects, and nothing else', () => {
  assert.deepEqual(
    metricNames(
      'histogram_quantile(0.99, sum by (le) (rate(preble_ttft_seconds_bucket{instance=~"$instance"}[$__rate_interval])))',
    ),
    ['preble_ttft_seconds_bucket'],
  );
  assert.deepEqual(
    metricNames('sum by (replica) (rate(a_total{x="sum(b)"}[5m])) / on (replica) group_left c > bool 1e3'),
    ['a_total', 'c'],
  );
  assert.deepEqual(metricNames('max(up offset 5m) or vector(0)'), ['up']);
});

test('every metric the Grafana dashboard queries is one the gateway exports', async () => {
  const series = await gatewaySeries();
  assert.ok(queries.length >= 20, `${queries.length} queries`);
  for (const { panel, expr } of [...queries, ...variableQueries]) {
    const names = metricNames(expr);
    assert.ok(names.length > 0, `${panel}: no metric in ${expr}`);
    for (const name of names)
      assert.ok(series.has(name), `${panel}: ${name} is not in the gateway's registry (${expr})`);
    // Histograms are read through their series: a bare histogram name selects nothing.
    assert.ok(!/_bucket\b/.test(expr) || expr.includes('histogram_quantile'), `${panel}: ${expr}`);
  }
});

test("the dashboard covers every one of the gateway's own metrics", async () => {
  const series = await gatewaySeries();
  const queried = new Set(queries.flatMap(({ expr }) => metricNames(expr)).map((n) => series.get(n)));
  const own = new Set([...series.values()].filter((name) => name.startsWith('preble_')));
  assert.ok(own.size >= 13);
  for (const name of own) assert.ok(queried.has(name), `no panel shows ${name}`);
});

test('the dashboard is importable: a Prometheus datasource variable every query uses, unique panel ids', () => {
  assert.equal(dashboard.uid, 'preble-gateway');
  const datasource = dashboard.templating.list.find((v) => v.type === 'datasource');
  assert.equal(datasource?.name, 'datasource');
  assert.equal(datasource?.query, 'prometheus');
  const ids = panels.map((p) => p.id);
  assert.equal(new Set(ids).size, ids.length);
  for (const p of panels.filter((x) => x.type !== 'row')) {
    assert.equal(p.datasource?.uid, DATASOURCE_UID, p.title);
    assert.ok((p.targets ?? []).length > 0, p.title);
    for (const t of p.targets ?? []) {
      assert.equal(t.datasource?.uid, DATASOURCE_UID, p.title);
      assert.match(t.expr, /instance=~"\$instance"/, `${p.title}: every selector filters by $instance`);
    }
  }
});
