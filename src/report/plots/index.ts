export { lineChart } from './line-chart.ts';
export { type Axis, CHART_FONT, type LineChart, lineChartSpec, type Series } from './line-chart-spec.ts';
export { type PngOptions, svgToPng } from './svg-to-png.ts';
