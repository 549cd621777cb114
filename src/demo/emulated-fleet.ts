import { createEngineServer, type EngineServer } from '../emulator/server.ts';
import type { FleetFactory } from './fleet.ts';

/** `preble engine` replicas in this process, running `timeScale` times faster than real time. */
export function emulatedFleet(model: string, timeScale: number): FleetFactory {
  return async (count) => {
    const engines: { engine: EngineServer; url: string }[] = [];
    for (let i = 0; i < count; i++) {
      const engine = createEngineServer({ model, timeScale, queuePolicy: 'lpm' });
      engines.push({ engine, url: (await engine.listen(0, '127.0.0.1')).url });
    }
    return {
      urls: engines.map((e) => e.url),
      dialect: 'preble',
      async stop() {
        for (const e of engines) await e.engine.close(0);
      },
    };
  };
}
