import type { InstanceCost } from '../types.ts';

/** The cost list of policies that compare no costs: one frozen array, so a decision allocates nothing. */
export const NO_COSTS: readonly InstanceCost[] = Object.freeze([]);
