import { Pool } from 'undici';

/** One upstream replica: its URL and a keep-alive connection pool. */
export interface Replica {
  readonly id: number;
  readonly url: string;
  readonly pool: Pool;
}

/** The replicas the gateway forwards to, by instance id (the policy's view). */
export class ReplicaSet {
  private readonly replicas: Replica[] = [];

  add(url: string): Replica {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new Error(`replica URL must be http or https, got '${url}'`);
    }
    const replica: Replica = {
      id: this.replicas.length,
      url: parsed.origin,
      pool: new Pool(parsed.origin, { connections: 64, pipelining: 1, keepAliveTimeout: 30_000 }),
    };
    this.replicas.push(replica);
    return replica;
  }

  get(id: number): Replica | undefined {
    return this.replicas[id];
  }

  all(): readonly Replica[] {
    return this.replicas;
  }

  async close(): Promise<void> {
    await Promise.all(this.replicas.map((r) => r.pool.close()));
  }
}
