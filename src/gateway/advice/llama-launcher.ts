/**
 * The launcher `preble serve --llama-replicas` acts with: each start is one llama-server on a free
 * port (src/real/replicas.ts startOne, the code `preble replicas start` runs), stopped by its PID.
 * Mixed replicas only: prefill and decode llama.cpp replicas need a shared slot directory.
 */
import { type LlamaReplicaOptions, startOne, urlOf } from '../../real/replicas.ts';
import type { ReplicaLauncher } from './actor.ts';

export function llamaLauncher(options: Omit<LlamaReplicaOptions, 'count'>, graceMs = 5000): ReplicaLauncher {
  let index = 0;
  return {
    dialect: 'llamacpp',
    roles: ['mixed'],
    async start() {
      const { proc, port } = await startOne({ ...options, count: 1 }, index++, undefined);
      return { url: urlOf(options.host ?? '127.0.0.1', port), stop: () => proc.stop(graceMs) };
    },
  };
}
