import { randomInt } from 'node:crypto';
import type { Attempt } from './forward.ts';
import { endpointOf, type PdProtocol, type PdSession } from './pd-protocol.ts';
import type { Replica } from './replicas.ts';

/**
 * SGLang's PD protocol, as its router's PD mode sends it (`sglang.srt.disaggregation.mini_lb`,
 * `_forward_to_backend` and `generate`/`generate_stream`; the Rust router's PD mode does the same):
 * the client's request, with `bootstrap_host` (the prefill server's host name), `bootstrap_port` (its
 * bootstrap server: `--disaggregation-bootstrap-port`, default 8998) and a random `bootstrap_room`,
 * goes to the prefill and to the decode server **together**, on the same endpoint; the decode
 * server's answer is the client's, the prefill's is read and dropped. The two engines meet through the
 * bootstrap server and move the KV themselves; neither answer carries anything to hand over.
 *
 * The gateway asks each prefill replica's bootstrap port once, from `GET /get_server_info`
 * (`disaggregation_bootstrap_port`, as SGLang reports its server args), falling back to 8998.
 * The prefill leg is sent with `stream: false` (its answer is dropped anyway).
 */
export const sglangBootstrap: PdProtocol = {
  name: 'sglang-bootstrap',
  concurrent: true,
  open(a: Attempt): PdSession {
    const prefill = a.replica;
    let fields: Promise<Record<string, unknown>> | undefined;
    const bootstrap = (signal: AbortSignal) => {
      fields ??= bootstrapPort(prefill, signal).then((port) => ({
        bootstrap_host: new URL(prefill.url).hostname,
        bootstrap_port: port,
        // SGLang draws from [0, 2^63); JSON numbers here stay exact below 2^53.
        bootstrap_room: randomInt(0, 2 ** 48 - 1) * 32 + randomInt(0, 32),
      }));
      return fields;
    };
    return {
      async prefillRequest(signal) {
        const { stream_options: _so, ...rest } = a.body;
        return { path: endpointOf(a), body: { ...rest, stream: false, ...(await bootstrap(signal)) } };
      },
      handOff: async () => ({ kind: 'kv' }),
      async decodeRequest(_decode, signal) {
        return { body: { ...a.body, ...(await bootstrap(signal)) }, handOff: 'kv', release() {} };
      },
      close() {},
    };
  },
};

/** SGLang's default `--disaggregation-bootstrap-port`. */
export const DEFAULT_BOOTSTRAP_PORT = 8998;

const ports = new WeakMap<Replica, Promise<number>>();

function bootstrapPort(replica: Replica, signal: AbortSignal): Promise<number> {
  let port = ports.get(replica);
  if (port === undefined) {
    port = askBootstrapPort(replica, signal);
    ports.set(replica, port);
    // A failed ask is asked again next time.
    port.catch(() => ports.delete(replica));
  }
  return port;
}

async function askBootstrapPort(replica: Replica, signal: AbortSignal): Promise<number> {
  const res = await replica.control.request({
    path: '/get_server_info',
    method: 'GET',
    signal,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const text = await res.body.text();
  if (res.statusCode === 404) return DEFAULT_BOOTSTRAP_PORT;
  if (res.statusCode !== 200) throw new Error(`GET /get_server_info answered ${res.statusCode}`);
  let port: unknown;
  try {
    port = (JSON.parse(text) as { disaggregation_bootstrap_port?: unknown }).disaggregation_bootstrap_port;
  } catch {
    port = undefined;
  }
  return typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536
    ? port
    : DEFAULT_BOOTSTRAP_PORT;
}
