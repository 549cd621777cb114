/**
 * DistServe's queueing model of a prefill instance (OSDI 24 §3.1; seed digest
 * ../shared/research/seed-distserve-vidur.md): one FCFS server, Poisson arrivals at R, a fixed execution
 * time D, so the average TTFT is Eq. 1, D + R D^2 / (2 (1 - R D)); intra-op parallelism with speed-up K
 * runs each request in D / K (Eq. 3). Used to ask how large K must be for a tensor-parallel instance to
 * beat one GPU per GPU, the trade-off §3.1 describes.
 */

/** Eq. 1 with execution time `service`: the average TTFT at `rate` (infinite at or past saturation). */
export function averageTtft(service: number, rate: number): number {
  if (rate * service >= 1) return Number.POSITIVE_INFINITY;
  return service + (rate * service * service) / (2 * (1 - rate * service));
}

/**
 * The highest rate whose Eq. 1 average TTFT is at most `target` (0 when the execution alone exceeds it):
 * solving s + R s^2 / (2 (1 - R s)) = T for R gives 2w / (s (s + 2w)), w = T - s.
 */
export function rateWithin(service: number, target: number): number {
  const slack = target - service;
  if (!(service > 0) || slack <= 0) return 0;
  return (2 * slack) / (service * (service + 2 * slack));
}

/** Per-GPU rate of an instance of `gpus` GPUs with speed-up `speedup` over one (Eq. 3's D / K). */
export function perGpuRateWithin(service: number, target: number, gpus: number, speedup: number): number {
  return rateWithin(service / speedup, target) / gpus;
}

/**
 * The speed-up at which `gpus` GPUs in one intra-op instance match one GPU per GPU under the average-TTFT
 * `target` (bisection to 1e-6; service / target when one GPU meets it at no rate); undefined when even a perfect speed-up (K = gpus) does not match it.
 * Below it, one GPU per instance serves more per GPU.
 */
export function breakEvenSpeedup(service: number, target: number, gpus: number): number | undefined {
  const one = rateWithin(service, target);
  // One GPU cannot meet the target at all: any speed-up that brings the service under it wins.
  if (one === 0) return service / target;
  const at = (k: number) => perGpuRateWithin(service, target, gpus, k);
  if (at(gpus) < one) return undefined;
  let lo = 1e-9;
  let hi = gpus;
  while (hi - lo > 1e-6) {
    const mid = (lo + hi) / 2;
    if (at(mid) >= one) hi = mid;
    else lo = mid;
  }
  return hi;
}
