import type { ModelEntry, ReplicaSet } from './replicas.ts';

/**
 * One round of model discovery: GET /v1/models on every present replica without a configured model
 * (preble engine, vLLM, SGLang and llama-server all answer it). A list puts the replica in the pool
 * of its first model; an answer without a usable list (404, 401, not JSON, empty) puts it among the
 * replicas that serve `any` model; no answer (refused, timeout, 5xx) leaves it as it was, unknown
 * until a later round.
 */
export async function discoverModels(replicas: ReplicaSet, timeoutSeconds: number): Promise<void> {
  const timeout = timeoutSeconds * 1000;
  await Promise.all(
    replicas
      .present()
      .filter((r) => r.configuredModel === undefined)
      .map(async (r) => {
        let status: number;
        let text: string;
        try {
          const res = await r.control.request({
            path: '/v1/models',
            method: 'GET',
            headersTimeout: timeout,
            bodyTimeout: timeout,
            signal: AbortSignal.timeout(timeout),
          });
          status = res.statusCode;
          text = await res.body.text();
        } catch {
          return; // unreachable this round: its model stays as it was
        }
        if (r.removed || status >= 500) return;
        replicas.setModels(r, status === 200 ? (modelList(text) ?? 'any') : 'any');
      }),
  );
}

/** The entries of an OpenAI model list (`{"data": [{"id": ...}, ...]}`); undefined when it is none. */
export function modelList(text: string): ModelEntry[] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) return undefined;
  const entries = data.filter(
    (m): m is ModelEntry =>
      typeof m === 'object' && m !== null && typeof (m as { id?: unknown }).id === 'string',
  );
  return entries.length > 0 ? entries : undefined;
}
