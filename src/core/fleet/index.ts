export { fleetCostPerHour, fleetGpuCount, fleetPowerWatts, perGpu } from './cost.ts';
export { buildFleet, type Fleet, type FleetInstance, resolveSpecModel } from './fleet.ts';
export * from './kv-link.ts';
export { looksLikeFleetShorthand, parseFleetShorthand } from './shorthand.ts';
export * from './spec.ts';
