import type { Tokens } from '../core/types.ts';
import type { PromptInput, PromptTokenizer } from '../text/prompt-tokenizer.ts';
import type { ReplicaSet } from './replicas.ts';

/**
 * The `backend` tokenizer mode: the replicas' own /tokenize (in their dialect), so the router's
 * token ids are exactly the engine's. Costs one round trip per request; any routable replica of the
 * request's model pool will do, tried in turn until one answers.
 */
export class BackendTokenizer implements PromptTokenizer {
  readonly name = 'backend';
  private next = 0;

  constructor(
    private readonly replicas: ReplicaSet,
    private readonly timeoutSeconds: number,
  ) {}

  async tokenize(input: PromptInput, model?: string): Promise<Tokens> {
    const pool = model === undefined ? undefined : this.replicas.poolFor(model);
    const candidates = this.replicas.routable().filter((r) => pool === undefined || r.modelPool === pool);
    if (candidates.length === 0) throw new Error('no replica is available to tokenize');
    let lastError: unknown;
    for (let k = 0; k < candidates.length; k++) {
      const replica = candidates[(this.next + k) % candidates.length]!;
      try {
        const tokens = await replica.dialect.tokenize(input, model, async (path, body) => {
          const res = await replica.control.request({
            path,
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
            headersTimeout: this.timeoutSeconds * 1000,
            bodyTimeout: this.timeoutSeconds * 1000,
          });
          const text = await res.body.text();
          if (res.statusCode !== 200) throw new Error(`${replica.url}${path} answered ${res.statusCode}`);
          return JSON.parse(text) as unknown;
        });
        this.next = (this.next + k + 1) % candidates.length;
        return tokens;
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError instanceof Error ? lastError : new Error(String(lastError));
  }
}
