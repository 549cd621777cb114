/**
 * The host (CPU) KV pool of an engine that swaps preempted requests out instead of recomputing them
 * (vLLM's `preemption_mode=swap`, FastServe's host KV cache). Pure bookkeeping: tokens held on the
 * host, and the seconds a copy over PCIe takes (bytes / bandwidth). The engine charges those seconds to
 * the iteration that swaps: vLLM runs its swap_out/swap_in block copies before the model step on the
 * same stream, so they add to the iteration's time. FastServe overlaps its swaps with compute
 * (proactive swapping); charging them whole is the upper bound of that.
 */
export class HostKvPool {
  /** Tokens of KV held on the host (each swapped request's whole KV). */
  used = 0;

  constructor(
    /** Tokens the host pool holds; 0: no pool (recomputation only, as before). */
    readonly capacityTokens: number,
    /** Bytes per second between GPU and host memory, one direction. */
    readonly bandwidth: number,
    readonly kvBytesPerToken: number,
  ) {}

  /** Whether `tokens` more fit on the host. */
  fits(tokens: number): boolean {
    return this.capacityTokens > 0 && this.used + tokens <= this.capacityTokens;
  }

  take(tokens: number): void {
    this.used += tokens;
  }

  give(tokens: number): void {
    this.used -= tokens;
  }

  /** Seconds to copy the KV of `tokens` tokens one way. */
  seconds(tokens: number): number {
    return tokens > 0 ? (tokens * this.kvBytesPerToken) / this.bandwidth : 0;
  }
}
