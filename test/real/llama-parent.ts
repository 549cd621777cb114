// A process that starts one (fake) llama-server through LlamaProcess, prints `server PID` once it
// is healthy, and then waits to be killed: the parent whose SIGKILL llama-process.test.ts tests.
import { freePort } from '../../src/real/free-port.ts';
import { LlamaProcess } from '../../src/real/llama-process.ts';

const port = await freePort();
const proc = await LlamaProcess.start({
  binary: process.argv[2]!,
  args: ['-m', 'model.gguf', '--host', '127.0.0.1', '--port', String(port)],
  url: `http://127.0.0.1:${port}`,
  startTimeoutMs: 30_000,
});
process.stdout.write(`server ${proc.pid}\n`);
setInterval(() => {}, 60_000);
