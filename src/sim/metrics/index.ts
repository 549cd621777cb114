export { type InstanceSummary, perInstance } from './per-instance.ts';
export { isCompleted, type RequestRecord, tpotOf, ttftOf } from './record.ts';
export { type Slo, type SloAttainment, sloAttainment } from './slo.ts';
export { type Summary, type SummaryOptions, summarize } from './summary.ts';
