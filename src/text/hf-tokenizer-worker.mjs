// The entry of the hf tokenizer's pool threads (src/text/hf-tokenizer-pool.ts). Worker threads do not
// inherit a tsx registered with register() (bin/preble.js) and Node 20 cannot load .ts itself, so in a
// checkout (the .ts source beside this file) the thread imports it through tsx's scoped tsImport,
// which works whether or not tsx is also loaded for the whole thread (`node --import tsx`); the built
// package (dist/, no .ts) imports the compiled JavaScript.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const source = new URL('./hf-tokenizer-thread.ts', import.meta.url);
let thread;
if (existsSync(fileURLToPath(source))) {
  const { tsImport } = await import('tsx/esm/api');
  thread = await tsImport(source.href, import.meta.url);
} else {
  thread = await import(new URL('./hf-tokenizer-thread.js', import.meta.url).href);
}

export default thread.default;
