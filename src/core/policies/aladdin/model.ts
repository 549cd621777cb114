/**
 * Aladdin's performance models for one worker configuration: the cost model's profile first, then
 * refit from what the policy observes (Eq. 1-3; src/core/provisioning/fits.ts). A policy sees requests,
 * not batches, so each sample is one request's: its uncached prompt and started-to-first-token time
 * (Eq. 2, the batch it rode in read as its own), its time per output token after the first at the
 * batch size and mean context its worker had then (Eq. 3), and a worker's polled KV use against the
 * context the policy believes it holds (Eq. 1).
 */
import type { CostModel } from '../../cost-model/types.ts';
import {
  type AladdinFits,
  costModelFits,
  type DecodeFit,
  type DecodeSample,
  FitWindow,
  fitDecode,
  fitKv,
  fitPrefill,
  type KvFit,
  type KvSample,
  type PrefillFit,
  type PrefillSample,
} from '../../provisioning/fits.ts';

export class AladdinModel {
  readonly kv: FitWindow<KvSample, KvFit>;
  readonly prefill: FitWindow<PrefillSample, PrefillFit>;
  readonly decode: FitWindow<DecodeSample, DecodeFit>;
  private readonly prior: AladdinFits;

  constructor(
    costModel: CostModel,
    private readonly refit: boolean,
  ) {
    this.prior = costModelFits(costModel);
    this.kv = new FitWindow(this.prior.kv, fitKv, (f) => f.h > 0);
    this.prefill = new FitWindow(this.prior.prefill, fitPrefill, (f) => f.k1 > 0);
    this.decode = new FitWindow(this.prior.decode, fitDecode, (f) => f.k2 > 0);
  }

  current(): AladdinFits {
    if (!this.refit) return this.prior;
    return { kv: this.kv.current(), prefill: this.prefill.current(), decode: this.decode.current() };
  }
}
