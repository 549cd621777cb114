/**
 * A fleet configuration made concrete: each spec's model resolved to a cost-model preset name, its specs
 * expanded by count into instances numbered 0..N-1 in order, the instances packed onto nodes, and the links.
 */
import { GPU_ALIASES, GPU_ECONOMICS, GPU_SHAPES, type GpuName } from '../cost-model/gpu-shapes.ts';
import { kvBytesPerToken } from '../cost-model/instance.ts';
import { MODEL_SHAPES, type ModelName } from '../cost-model/model-shapes.ts';
import { costModelPreset } from '../cost-model/presets.ts';
import type { InstanceId, Role } from '../types.ts';
import { type KvLink, kvLink, type LinkPlacement } from './kv-link.ts';
import { type FleetConfig, FleetSpecError, type InstanceSpec } from './spec.ts';

/** One instance of a fleet. */
export interface FleetInstance {
  readonly id: InstanceId;
  readonly role: Role;
  /** Index of the spec it came from in FleetConfig.instances. */
  readonly specIndex: number;
  /** The cost-model preset name to build it with (`costModelPreset`). */
  readonly costModel: string;
  /** The model shape's name (`llama3-8b`) and its GPU's (`h100-80g`). */
  readonly model: string;
  readonly gpu: string;
  readonly tensorParallel: number;
  readonly pipelineParallel: number;
  /** tensorParallel x pipelineParallel. */
  readonly gpus: number;
  readonly queuePolicy: InstanceSpec['queuePolicy'];
  readonly chunkTokens?: number;
  readonly maxRunning?: number;
  /** US dollars per hour for the instance; undefined when neither the spec nor the GPU's table gives one. */
  readonly pricePerHour: number | undefined;
  /** KV bytes per token of the whole instance, and the model's layers (for KV transfers). */
  readonly kvBytesPerToken: number;
  readonly layers: number;
  /** The node it runs on (instances fill nodes of `gpusPerNode` GPUs, in id order). */
  readonly node: number;
}

export interface Fleet extends LinkPlacement {
  readonly instances: readonly FleetInstance[];
  readonly gpusPerNode: number;
  readonly transferMode: FleetConfig['transferMode'];
}

interface ResolvedModel {
  readonly costModel: string;
  readonly model: string;
  readonly gpu: string;
  readonly tensorParallel: number;
  readonly kvBytesPerToken: number;
  readonly layers: number;
}

function canonicalGpu(name: string): GpuName | undefined {
  if (Object.hasOwn(GPU_SHAPES, name)) return name as GpuName;
  return GPU_ALIASES[name];
}

const gpuList = () => [...Object.keys(GPU_SHAPES), ...Object.keys(GPU_ALIASES)].join(', ');
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A spec's model, GPU and tensor parallelism as one cost-model preset; throws naming the field. */
export function resolveSpecModel(spec: InstanceSpec, field: string): ResolvedModel {
  if (Object.hasOwn(MODEL_SHAPES, spec.model)) {
    const shape = MODEL_SHAPES[spec.model as ModelName];
    if (spec.gpu === undefined)
      throw new FleetSpecError(`${field}.gpu`, `required with a bare model name ('${spec.model}')`);
    const gpu = canonicalGpu(spec.gpu);
    if (gpu === undefined)
      throw new FleetSpecError(`${field}.gpu`, `unknown GPU '${spec.gpu}'; valid: ${gpuList()}`);
    const tp = spec.tensorParallel ?? 1;
    const pp = spec.pipelineParallel ?? 1;
    // The cost model runs the spec's stages too (pipeline bubbles, sends between stages: parallel.ts).
    const name = `roofline:${shape.name}@${gpu}${tp === 1 ? '' : `x${tp}`}${pp === 1 ? '' : `p${pp}`}`;
    try {
      costModelPreset(name);
    } catch (error) {
      throw new FleetSpecError(`${field}.tensorParallel`, message(error));
    }
    return {
      costModel: name,
      model: shape.name,
      gpu,
      tensorParallel: tp,
      kvBytesPerToken: kvBytesPerToken(shape),
      layers: shape.layers,
    };
  }
  let preset: ReturnType<typeof costModelPreset>;
  try {
    preset = costModelPreset(spec.model);
  } catch (error) {
    throw new FleetSpecError(
      `${field}.model`,
      `${message(error)}; or a bare model name (${Object.keys(MODEL_SHAPES).join(', ')}) with gpu`,
    );
  }
  const { model, gpu, gpuCount } = preset.instance;
  if (spec.gpu !== undefined && canonicalGpu(spec.gpu) !== gpu.name) {
    throw new FleetSpecError(
      `${field}.gpu`,
      `'${spec.gpu}' differs from ${spec.model}'s ${gpu.name}; for another GPU name the model (${model.name}) with gpu`,
    );
  }
  if (spec.tensorParallel !== undefined && spec.tensorParallel !== gpuCount) {
    throw new FleetSpecError(
      `${field}.tensorParallel`,
      `${spec.tensorParallel} differs from ${spec.model}'s ${gpuCount}; for another split name the model (${model.name}) with gpu and tensorParallel`,
    );
  }
  return {
    costModel: spec.model,
    model: model.name,
    gpu: gpu.name,
    tensorParallel: gpuCount,
    kvBytesPerToken: kvBytesPerToken(model),
    layers: model.layers,
  };
}

/** The specs expanded by count into instances 0..N-1, in order, packed onto nodes; throws naming the field. */
export function buildFleet(config: FleetConfig): Fleet {
  const roles = new Set(config.instances.map((s) => s.role));
  if (roles.has('prefill') !== roles.has('decode')) {
    const missing = roles.has('prefill') ? 'decode' : 'prefill';
    throw new FleetSpecError(
      'instances',
      `a fleet with ${missing === 'decode' ? 'prefill' : 'decode'} instances needs ${missing} instances too`,
    );
  }
  const instances: FleetInstance[] = [];
  let node = 0;
  let usedOnNode = 0;
  config.instances.forEach((spec, specIndex) => {
    const resolved = resolveSpecModel(spec, `instances.${specIndex}`);
    const gpus = resolved.tensorParallel * spec.pipelineParallel;
    const listed = GPU_ECONOMICS[resolved.gpu as GpuName]?.pricePerHour;
    const pricePerHour = spec.pricePerHour ?? (listed === undefined ? undefined : listed * gpus);
    for (let i = 0; i < spec.count; i++) {
      if (usedOnNode > 0 && usedOnNode + gpus > config.gpusPerNode) {
        node += 1;
        usedOnNode = 0;
      }
      instances.push({
        id: instances.length,
        role: spec.role,
        specIndex,
        costModel: resolved.costModel,
        model: resolved.model,
        gpu: resolved.gpu,
        tensorParallel: resolved.tensorParallel,
        pipelineParallel: spec.pipelineParallel,
        gpus,
        queuePolicy: spec.queuePolicy,
        ...(spec.chunkTokens === undefined ? {} : { chunkTokens: spec.chunkTokens }),
        ...(spec.maxRunning === undefined ? {} : { maxRunning: spec.maxRunning }),
        pricePerHour,
        kvBytesPerToken: resolved.kvBytesPerToken,
        layers: resolved.layers,
        node,
      });
      if (gpus >= config.gpusPerNode) {
        // An instance as large as a node or larger has whole nodes to itself.
        node += Math.ceil(gpus / config.gpusPerNode);
        usedOnNode = 0;
      } else {
        usedOnNode += gpus;
      }
    }
  });
  const link = (name: FleetConfig['network'], field: string): KvLink => {
    try {
      return kvLink(name, config.links[name]);
    } catch (error) {
      throw new FleetSpecError(field, message(error));
    }
  };
  const nodes = instances.map((inst) => inst.node);
  return {
    instances,
    gpusPerNode: config.gpusPerNode,
    transferMode: config.transferMode,
    nodeLink: link(config.nodeLink, `links.${config.nodeLink}`),
    network: link(config.network, `links.${config.network}`),
    nodeOf: (id) => {
      const n = nodes[id];
      if (n === undefined) throw new Error(`no instance ${id} in the fleet (it has ${nodes.length})`);
      return n;
    },
  };
}
