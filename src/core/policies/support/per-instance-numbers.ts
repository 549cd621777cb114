import type { InstanceId } from '../../types.ts';

/** A number per instance id (ids are small integers): a growable typed array, 0 for ids never set. */
export class PerInstanceNumbers {
  private values = new Float64Array(16);

  get(instance: InstanceId): number {
    return instance < this.values.length ? this.values[instance]! : 0;
  }

  set(instance: InstanceId, value: number): void {
    if (instance >= this.values.length) {
      const grown = new Float64Array(Math.max(instance + 1, this.values.length * 2));
      grown.set(this.values);
      this.values = grown;
    }
    this.values[instance] = value;
  }

  add(instance: InstanceId, delta: number): void {
    this.set(instance, this.get(instance) + delta);
  }
}
