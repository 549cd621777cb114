import { readFileSync } from 'node:fs';

/** A trace file's text; the error names the file (the parsers only ever see strings). */
export function readTraceText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read trace file '${path}': ${(error as Error).message}`);
  }
}
