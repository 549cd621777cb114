import { ablation } from './ablation.ts';
import { aladdin } from './aladdin.ts';
import { azureMixed } from './azure-mixed.ts';
import { distserve } from './distserve.ts';
import { distservePlacement } from './distserve-placement.ts';
import { policies } from './policies.ts';
import { prebleE2e } from './preble-e2e.ts';
import { prefixDisagg } from './prefix-disagg.ts';
import { schedulers } from './schedulers.ts';
import { splitwise } from './splitwise.ts';
import { tetriinfer } from './tetriinfer.ts';
import type { Experiment } from './types.ts';
import { vidurSearch } from './vidur-search.ts';

export const experiments: readonly Experiment[] = [
  prebleE2e,
  ablation,
  azureMixed,
  policies,
  distserve,
  splitwise,
  prefixDisagg,
  vidurSearch,
  distservePlacement,
  schedulers,
  tetriinfer,
  aladdin,
];

export function findExperiment(name: string): Experiment {
  const e = experiments.find((x) => x.name === name);
  if (e === undefined) {
    throw new Error(
      `unknown experiment '${name}'; valid experiments: ${experiments.map((x) => x.name).join(', ')}`,
    );
  }
  return e;
}
