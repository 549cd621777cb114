/**
 * Capacities on disk, one JSON file per task named by a hash of the task, so that a repeated search
 * reads its answers instead of simulating. The hash covers the whole task (scenario, criterion,
 * search options) and `CACHE_VERSION`, bumped when the simulator or the cost models change what a
 * scenario gives.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { prebleCacheDir } from '../util/cache-dir.ts';
import type { Capacity } from './capacity.ts';
import type { CapacityTask } from './task.ts';

export const CACHE_VERSION = 3;

/** `plan/` under Preble's cache root (`~/.cache/preble`, or $PREBLE_CACHE_DIR), beside the built binaries. */
export function defaultCacheDir(): string {
  return join(prebleCacheDir(), 'plan');
}

/** JSON with object keys sorted, so that equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function taskHash(task: CapacityTask): string {
  return createHash('sha256')
    .update(canonicalJson({ version: CACHE_VERSION, task }))
    .digest('hex')
    .slice(0, 32);
}

export interface CapacityCache {
  get(task: CapacityTask): Capacity | undefined;
  set(task: CapacityTask, capacity: Capacity): void;
}

/** A cache in `dir` (created on first write). Unreadable entries count as missing. */
export function directoryCache(dir: string): CapacityCache {
  return {
    get(task) {
      try {
        return JSON.parse(readFileSync(join(dir, `${taskHash(task)}.json`), 'utf8')) as Capacity;
      } catch {
        return undefined;
      }
    },
    set(task, capacity) {
      mkdirSync(dir, { recursive: true });
      const path = join(dir, `${taskHash(task)}.json`);
      // Written whole then renamed: two searches sharing the cache never read half a file.
      const temporary = `${path}.${process.pid}.tmp`;
      writeFileSync(temporary, JSON.stringify(capacity));
      renameSync(temporary, path);
    },
  };
}

/** No cache (`--no-cache`). */
export const noCache: CapacityCache = { get: () => undefined, set: () => {} };
