import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// A stand-in for llama-server, so replica management is tested without the real binary. Its model
// path picks a behaviour: "crash" exits while loading, "second" exits if a first one already ran,
// "hang" never becomes healthy, "stubborn" ignores SIGTERM; otherwise it answers /health (503 while
// "loading", then 200) and /args.
const SCRIPT = `
const http = require('node:http');
const argv = process.argv.slice(2);
if (argv[0] === '--version') { console.log('version: fake'); process.exit(0); }
const arg = (name) => argv[argv.indexOf(name) + 1];
const model = arg('-m');
console.error('pid ' + process.pid);
let crash = model.includes('crash');
if (model.includes('second')) {
  try { require('node:fs').writeFileSync(model + '.ran', '', { flag: 'wx' }); } catch { crash = true; }
}
if (crash) {
  console.error('llama_model_load: error loading model: bad magic');
  console.error('main: exiting due to model loading error');
  process.exit(1);
}
if (model.includes('stubborn')) process.on('SIGTERM', () => {});
else process.on('SIGTERM', () => process.exit(0));
const started = Date.now();
const server = http.createServer((req, res) => {
  if (req.url === '/args') return res.end(JSON.stringify(argv));
  const ready = !model.includes('hang') && Date.now() - started > 150;
  res.statusCode = ready ? 200 : 503;
  res.end(ready ? '{"status":"ok"}' : '{"error":{"code":503,"message":"Loading model"}}');
});
server.on('error', (e) => { console.error('couldn\\'t bind HTTP server socket: ' + e.code); process.exit(1); });
server.listen(Number(arg('--port')), arg('--host'), () => console.error('main: server is listening'));
`;

/** Write the fake server into `dir` and return its path. */
export function writeFakeLlamaServer(dir: string): string {
  const path = join(dir, 'fake-llama-server');
  writeFileSync(path, `#!${process.execPath}\n${SCRIPT}`);
  chmodSync(path, 0o755);
  return path;
}
