/**
 * `--fleet FILE` and `--fleet 2P1D`: the fleet file read here (YAML or JSON, through the `yaml` package,
 * which reads both), the configuration checked and expanded by core/fleet. Every error is one line naming
 * the file (or the flag) and the field.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import {
  buildFleet,
  type Fleet,
  type FleetConfig,
  FleetSpecError,
  looksLikeFleetShorthand,
  parseFleetConfig,
  parseFleetShorthand,
} from '../core/fleet/index.ts';

/** The checked configuration of a fleet file; `model` (the run's `--model`) fills specs that name none. */
export function readFleetFile(path: string, model?: string): FleetConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(
      `cannot read fleet file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`,
    );
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    const first = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    throw new Error(`${path}: not valid YAML or JSON: ${first}`);
  }
  return withSource(path, () => parseFleetConfig(raw, model === undefined ? {} : { defaultModel: model }));
}

/**
 * The fleet `--fleet VALUE` names: the shorthand (counts with P, D or M, of `model`) when VALUE has its
 * shape, else a file (a name with a `.` or a `/`). Built: instances numbered, models resolved, links set.
 */
export function fleetFromFlag(value: string, model: string): Fleet {
  if (looksLikeFleetShorthand(value) || !/[./]/.test(value)) {
    return withSource('--fleet', () => buildFleet(parseFleetShorthand(value, model)));
  }
  const config = readFleetFile(value, model);
  return withSource(value, () => buildFleet(config));
}

function withSource<T>(source: string, run: () => T): T {
  try {
    return run();
  } catch (error) {
    if (error instanceof FleetSpecError) throw new Error(`${source}: ${error.message}`);
    throw error;
  }
}
