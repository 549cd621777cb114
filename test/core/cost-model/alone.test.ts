import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { aloneLatency } from '../../../src/core/cost-model/alone.ts';
import { costModelPreset } from '../../../src/core/cost-model/presets.ts';
import { runSimulation } from '../../../src/sim/run.ts';

const model = costModelPreset('mistral-7b-a6000');

test('aloneLatency is what the engine takes for a request alone, chunked prefill included', () => {
  for (const [prompt, output] of [
    [2636, 2],
    [17_567, 8],
    [300, 40],
  ] as const) {
    const tokens = Uint32Array.from({ length: prompt }, (_, i) => i + 1);
    const { result } = runSimulation({
      policy: 'round-robin',
      workload: 'one',
      instances: 1,
      rps: 1,
      costModel: model,
      requests: () => [{ id: 'r', arrival: 0, tokens, outputTokens: output, workload: 'one' }],
      seed: 0,
    });
    const r = result.records[0]!;
    const alone = aloneLatency(model, { promptTokens: prompt, outputTokens: output, chunkTokens: 512 });
    assert.ok(
      Math.abs(r.firstToken - r.arrival - alone.ttft) < 1e-9,
      `${prompt}: ttft ${r.firstToken} vs ${alone.ttft}`,
    );
    assert.ok(
      Math.abs(r.finish - r.arrival - alone.e2e) < 1e-9,
      `${prompt}: e2e ${r.finish} vs ${alone.e2e}`,
    );
  }
});

test('aloneLatency: one pass without a chunk budget, cached tokens skipped, a fully cached prompt recomputes its last token', () => {
  const onePass = aloneLatency(model, { promptTokens: 4000, outputTokens: 1 });
  assert.equal(onePass.ttft, model.prefillTime(4000, 0));
  assert.equal(onePass.tbt, undefined);
  const cached = aloneLatency(model, { promptTokens: 4000, cachedTokens: 3000, outputTokens: 1 });
  assert.equal(cached.ttft, model.prefillTime(1000, 3000));
  const all = aloneLatency(model, { promptTokens: 4000, cachedTokens: 4000, outputTokens: 1 });
  assert.equal(all.ttft, model.prefillTime(1, 3999));
});

test('aloneLatency: end to end is the first token plus one decode step per further token, one more token one more step', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20_000 }),
      fc.integer({ min: 0, max: 20_000 }),
      fc.integer({ min: 1, max: 600 }),
      fc.constantFrom(undefined, 256, 512, 2048),
      (prompt, cached, output, chunk) => {
        const a = aloneLatency(model, {
          promptTokens: prompt,
          cachedTokens: cached,
          outputTokens: output,
          ...(chunk === undefined ? {} : { chunkTokens: chunk }),
        });
        assert.ok(a.ttft > 0);
        assert.ok(Math.abs(a.e2e - a.ttft - (output > 1 ? a.tbt! * (output - 1) : 0)) < 1e-9);
        // One more output token is one more decode step: later, never earlier.
        const longer = aloneLatency(model, {
          promptTokens: prompt,
          cachedTokens: cached,
          outputTokens: output + 1,
          ...(chunk === undefined ? {} : { chunkTokens: chunk }),
        });
        assert.equal(longer.ttft, a.ttft);
        assert.ok(longer.e2e > a.e2e);
        // A budget of at least the uncached part is one pass.
        const uncached = prompt - Math.min(cached, prompt - 1);
        if (chunk !== undefined && chunk >= uncached) {
          const onePass = aloneLatency(model, {
            promptTokens: prompt,
            cachedTokens: cached,
            outputTokens: output,
          });
          assert.equal(a.ttft, onePass.ttft);
        }
      },
    ),
    { seed: 11, numRuns: 200 },
  );
});
