import { readFileSync } from 'node:fs';

/**
 * A trace file's text, without the byte-order mark some exporters write first (a JSON line does not
 * parse with it); the error names the file (the parsers only ever see strings).
 */
export function readTraceText(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read trace file '${path}': ${(error as Error).message}`);
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
