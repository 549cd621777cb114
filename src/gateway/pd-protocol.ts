import type { DialectName } from './config.ts';
import type { Attempt } from './forward.ts';
import type { Replica } from './replicas.ts';

/**
 * How one engine family hands a prefilled prompt from a prefill replica to a decode replica
 * (docs/gateway.md, "Prefill/decode disaggregation"). The two-leg forwarding in pd-forward.ts owns
 * the ordering, the failure rules, timeouts and the policy's feedback; a protocol only says what to
 * send and what to do between the legs. One `PdSession` per try of a request.
 */
export interface PdProtocol {
  readonly name: 'kv-transfer-params' | 'llamacpp-slots' | 'sglang-bootstrap';
  /**
   * Both legs are sent together (SGLang: the engines meet through the bootstrap server); otherwise
   * the decode leg goes once the prefill leg has answered.
   */
  readonly concurrent?: boolean;
  open(a: Attempt): PdSession;
}

/** An upstream request of one leg: path and JSON body. */
export interface PdLegRequest {
  readonly path: string;
  readonly body: Record<string, unknown>;
}

/** What the prefill leg's answer makes of the hand-off. */
export type PdHandOff =
  /** The KV is held for the decode replica. */
  | { readonly kind: 'kv' }
  /** The KV cannot be handed off (the prefill was fine): the decode replica computes the prompt itself. */
  | { readonly kind: 'recompute'; readonly reason: string }
  /** The prefill replica answered something unusable: a failure of that replica (retried elsewhere). */
  | { readonly kind: 'bad-prefill'; readonly message: string };

/** One try of the decode leg on one decode replica. */
export interface PdDecodePlan {
  /** The body for the one-leg forward (it shapes it further with the dialect). */
  readonly body: Record<string, unknown>;
  /** kv: the decode replica holds the prompt's KV; recompute: it will compute the prompt (colocated). */
  readonly handOff: 'kv' | 'recompute';
  /** Why it recomputes, when it does: a short code (save_failed, restore_failed, no_slots, dialect)... */
  readonly reason?: string;
  /** ...and in words. */
  readonly detail?: string;
  /** The transfer's wall-clock seconds, when the gateway ran it (llama.cpp: save + restore). */
  readonly transferSeconds?: number;
  /** Gives back what this decode try held (a reserved slot); called once, when the try ends. */
  release(): void;
}

export interface PdSession {
  /** Reserves what the prefill leg needs and says what to send; throws when that fails (a prefill failure). */
  prefillRequest(signal: AbortSignal): Promise<PdLegRequest>;
  /** After a 2xx prefill answer: where the KV is (vLLM: kv_transfer_params; llama.cpp: save the slot). */
  handOff(answer: Readonly<Record<string, unknown>>, signal: AbortSignal): Promise<PdHandOff>;
  /** Before each decode try on `decode`: brings the KV there when it can (llama.cpp: restore). */
  decodeRequest(decode: Replica, signal: AbortSignal): Promise<PdDecodePlan>;
  /** Gives back everything still held; idempotent, called on every exit. */
  close(): void;
}

/** The path of a request kind's OpenAI endpoint. */
export function endpointOf(a: Attempt): string {
  return a.kind === 'chat' ? '/v1/chat/completions' : '/v1/completions';
}

/**
 * The client's body as one prefill leg: one token, not streamed (vLLM's disaggregated proxy and
 * llama.cpp alike); what a protocol adds comes on top.
 */
export function oneTokenBody(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const { stream_options: _so, min_tokens: _mt, min_completion_tokens: _mct, ...rest } = body;
  return {
    ...rest,
    stream: false,
    max_tokens: 1,
    ...(body['max_completion_tokens'] === undefined ? {} : { max_completion_tokens: 1 }),
  };
}

/** The PD protocol a dialect's replicas speak; undefined: none (yet). */
export function pdProtocolName(dialect: DialectName): PdProtocol['name'] | undefined {
  if (dialect === 'preble' || dialect === 'vllm') return 'kv-transfer-params';
  if (dialect === 'llamacpp') return 'llamacpp-slots';
  if (dialect === 'sglang') return 'sglang-bootstrap';
  return undefined;
}

/**
 * Why the prefill and decode replicas cannot disaggregate together, if they cannot: each must speak
 * a PD protocol, and all the same one (a KV handed off one way is read back the same way).
 */
export function pdDialectsProblem(
  replicas: readonly { url: string; role: string; dialect: DialectName }[],
): string | undefined {
  let first: { url: string; protocol: string } | undefined;
  for (const r of replicas) {
    const protocol = pdProtocolName(r.dialect);
    if (protocol === undefined)
      return `replica ${r.url}: role ${r.role} needs a dialect that speaks a PD protocol (preble or vllm: kv_transfer_params; llamacpp: slot save/restore; sglang: bootstrap rooms); ${r.dialect} disaggregation is not implemented yet`;
    if (first === undefined) first = { url: r.url, protocol };
    else if (first.protocol !== protocol)
      return `replica ${r.url}: its dialect ${r.dialect} speaks the PD protocol ${protocol}, replica ${first.url} speaks ${first.protocol}; the prefill and decode replicas of a fleet need one protocol`;
  }
  return undefined;
}
