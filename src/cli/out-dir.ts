import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';

/**
 * Creates the output folder and checks it is writable before any work starts, so a bad `--out` fails
 * in a second with one line rather than after a whole simulation.
 */
export async function ensureWritableDir(dir: string, flag: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
    await access(dir, constants.W_OK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new Error(`${flag}: cannot write to '${dir}' (${code})`);
  }
}
