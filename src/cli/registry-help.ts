import type { Command } from 'commander';
import { describeCostModelPresets } from '../core/cost-model/presets.ts';
import { describeLengthPredictors } from '../core/length/registry.ts';
import { describeGlobalPolicies } from '../core/policies/registry.ts';
import { describeProvisioners } from '../core/provisioning/registry.ts';
import { describeQueuePolicies } from '../core/replica-queue/registry.ts';
import { describeWorkloads } from '../workloads/registry.ts';

type Registry = 'policies' | 'provisioners' | 'queuePolicies' | 'presets' | 'workloads' | 'predictors';

const SECTIONS: Record<Registry, { title: string; lines: () => string[] }> = {
  policies: {
    title: 'Global policies, with their options and defaults',
    lines: describeGlobalPolicies,
  },
  provisioners: { title: 'Provisioners (--provisioner), with their options', lines: describeProvisioners },
  queuePolicies: { title: 'Replica queue policies', lines: describeQueuePolicies },
  presets: { title: 'Cost-model presets', lines: describeCostModelPresets },
  workloads: { title: 'Workloads', lines: describeWorkloads },
  predictors: { title: 'Length predictors (NAME or NAME:KEY=VALUE,...)', lines: describeLengthPredictors },
};

/** Lists the valid values of the command's plugin flags after its options, read from the registries. */
export function addRegistryHelp(command: Command, registries: readonly Registry[]): Command {
  return command.addHelpText('after', () =>
    registries
      .map(
        (r) =>
          `\n${SECTIONS[r].title}:\n${SECTIONS[r]
            .lines()
            .map((line) => `  ${line}`)
            .join('\n')}`,
      )
      .join('\n'),
  );
}
