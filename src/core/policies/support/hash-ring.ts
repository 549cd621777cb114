import { hashPair } from '../../hash.ts';
import type { InstanceId } from '../../types.ts';

/** Points are packed with an owner index below them into one float, so a plain numeric sort orders both. */
const OWNER_SLOTS = 2 ** 21;

/**
 * A consistent-hash ring: `virtualNodes` points per instance, hashed from the instance id alone,
 * so adding or removing an instance moves only the keys next to its own points.
 */
export class HashRing {
  private points = new Uint32Array(0);
  private owners = new Int32Array(0);

  constructor(
    private readonly virtualNodes: number,
    private readonly seed: number,
  ) {}

  get size(): number {
    return this.points.length;
  }

  rebuild(instances: readonly InstanceId[]): void {
    if (instances.length >= OWNER_SLOTS)
      throw new Error(`hash ring: too many instances (${instances.length})`);
    const keys = new Float64Array(instances.length * this.virtualNodes);
    let k = 0;
    for (let i = 0; i < instances.length; i++) {
      for (let v = 0; v < this.virtualNodes; v++) {
        keys[k++] = hashPair(instances[i]!, v, this.seed) * OWNER_SLOTS + i;
      }
    }
    keys.sort();
    this.points = new Uint32Array(keys.length);
    this.owners = new Int32Array(keys.length);
    for (let j = 0; j < keys.length; j++) {
      const key = keys[j]!;
      const owner = key % OWNER_SLOTS;
      this.points[j] = (key - owner) / OWNER_SLOTS;
      this.owners[j] = instances[owner]!;
    }
  }

  /** Position of the first point at or clockwise after `hash`. */
  startIndex(hash: number): number {
    let lo = 0;
    let hi = this.points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.points[mid]! < hash) lo = mid + 1;
      else hi = mid;
    }
    return lo === this.points.length ? 0 : lo;
  }

  /** Owner of the point `steps` positions clockwise from `start`. */
  ownerAt(start: number, steps: number): InstanceId {
    return this.owners[(start + steps) % this.owners.length]!;
  }
}
