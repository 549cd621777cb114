import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** Root of Preble's on-disk cache (built binaries, generated models): $PREBLE_CACHE_DIR or ~/.cache/preble. */
export function prebleCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env['PREBLE_CACHE_DIR'];
  return dir ? resolve(dir) : join(homedir(), '.cache', 'preble');
}
