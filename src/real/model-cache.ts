import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { prebleCacheDir } from '../util/cache-dir.ts';
import { writeGgufModel } from './gguf/llama-model.ts';
import type { LlamaPresetName } from './gguf/presets.ts';

/**
 * A generated model file, cached by preset and seed under ~/.cache/preble/models (the generator is
 * deterministic, so a cached file is the file a fresh run would write).
 */
export async function cachedModel(
  preset: LlamaPresetName,
  seed: number,
  onProgress: (line: string) => void = () => {},
): Promise<string> {
  const dir = join(prebleCacheDir(), 'models');
  const path = join(dir, `${preset}-seed${seed}.gguf`);
  if (!existsSync(path)) {
    // writeGgufModel renames into place at the end, so an existing file is a complete one.
    await mkdir(dir, { recursive: true });
    onProgress(`writing the ${preset} model to ${path}`);
    await writeGgufModel({ preset, seed, path });
  }
  return path;
}
