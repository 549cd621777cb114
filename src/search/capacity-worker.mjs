// The entry of the search pool's threads (src/search/pool.ts), as src/text/hf-tokenizer-worker.mjs:
// threads do not inherit a tsx registered with register(), so in a checkout (the .ts source beside
// this file) the thread imports it through tsx's tsImport; the built package imports the JavaScript.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = new URL('./capacity-thread.ts', import.meta.url);
let thread;
if (existsSync(fileURLToPath(source))) {
  const { tsImport } = await import('tsx/esm/api');
  thread = await tsImport(source.href, import.meta.url);
} else {
  thread = await import(new URL('./capacity-thread.js', import.meta.url).href);
}

export default thread.default;
