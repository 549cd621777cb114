import type { Attempt } from './forward.ts';
import { endpointOf, oneTokenBody, type PdProtocol, type PdSession } from './pd-protocol.ts';

/**
 * vLLM-style disaggregation with a KV connector (`preble engine --role`, vLLM's NIXL/P2P connectors
 * behind its disaggregated proxy): the prefill request asks for a remote decode with
 * `kv_transfer_params: {do_remote_decode: true}` and one token; its answer's `kv_transfer_params`
 * name the held KV; the decode request carries them and the decode engine pulls the KV itself.
 */
export const kvTransferParams: PdProtocol = {
  name: 'kv-transfer-params',
  open(a: Attempt): PdSession {
    let params: Record<string, unknown> | undefined;
    return {
      prefillRequest: async () => ({ path: endpointOf(a), body: prefillBody(a.body) }),
      async handOff(answer) {
        const p = answer['kv_transfer_params'];
        if (typeof p !== 'object' || p === null)
          return {
            kind: 'bad-prefill',
            message:
              'answered without kv_transfer_params (is it started with a KV connector, or --role prefill?)',
          };
        params = p as Record<string, unknown>;
        return { kind: 'kv' };
      },
      async decodeRequest() {
        return { body: { ...a.body, kv_transfer_params: params }, handOff: 'kv', release() {} };
      },
      close() {},
    };
  },
};

/**
 * The prefill leg's body, as vLLM's disaggregated proxy sends it: one token, not streamed, and
 * `kv_transfer_params` asking the engine to keep the KV for a remote decode.
 */
export function prefillBody(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return {
    ...oneTokenBody(body),
    kv_transfer_params: {
      do_remote_decode: true,
      do_remote_prefill: false,
      remote_engine_id: null,
      remote_block_ids: null,
      remote_host: null,
      remote_port: null,
    },
  };
}
