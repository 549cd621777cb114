import type { TopLevelSpec } from 'vega-lite';

export interface Axis {
  readonly label: string;
  /** Logarithmic scale; points with a non-positive value on this axis are left out. */
  readonly log?: boolean;
}

export interface Series {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

export interface LineChart {
  readonly title: string;
  readonly x: Axis;
  readonly y: Axis;
  readonly series: readonly Series[];
  /** Plot area size in pixels (axes, title and legend come on top). Default 480 × 300. */
  readonly width?: number;
  readonly height?: number;
}

/**
 * Font list for every text mark: SVG viewers and resvg take the first one installed, so charts
 * look alike on Linux (DejaVu/Liberation), macOS and Windows.
 */
export const CHART_FONT = 'DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif';

/** The Vega-Lite spec of a multi-series line chart (pure: no rendering). */
export function lineChartSpec(chart: LineChart): TopLevelSpec {
  const values = chart.series.flatMap((series, order) =>
    series.points
      .filter(([x, y]) => plottable(x, chart.x) && plottable(y, chart.y))
      .map(([x, y]) => ({ series: series.name, order, x, y })),
  );
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: chart.title,
    width: chart.width ?? 480,
    height: chart.height ?? 300,
    background: 'white',
    // Legends show whole series names (ablation steps are long); the default cuts them at 160 px.
    config: { font: CHART_FONT, legend: { labelLimit: 400 } },
    data: { values },
    mark: { type: 'line', point: true, clip: true },
    encoding: {
      x: { field: 'x', type: 'quantitative', title: chart.x.label, scale: scaleOf(chart.x) },
      y: { field: 'y', type: 'quantitative', title: chart.y.label, scale: scaleOf(chart.y) },
      // Legend and colours in the caller's series order, not alphabetical.
      color: {
        field: 'series',
        type: 'nominal',
        title: null,
        scale: { domain: chart.series.map((s) => s.name) },
      },
      order: { field: 'x', type: 'quantitative' },
    },
  };
}

function scaleOf(axis: Axis) {
  return axis.log === true ? { type: 'log' as const } : { zero: false };
}

function plottable(value: number, axis: Axis): boolean {
  return Number.isFinite(value) && (axis.log !== true || value > 0);
}
