import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { costModelPreset } from '../../src/core/cost-model/presets.ts';
import type { KvLink } from '../../src/core/fleet/kv-link.ts';
import { createGlobalPolicy } from '../../src/core/policies/registry.ts';
import type { Role } from '../../src/core/types.ts';
import { type SimInstance, simulate } from '../../src/sim/simulator.ts';
import type { WorkloadRequest } from '../../src/workloads/types.ts';
import { simpleCostModel } from '../helpers/simple-cost-model.ts';
import { spacedStream } from '../helpers/spaced-stream.ts';

// Fleets of mixed KV sizes: whatever instance a policy picks first, a request is served whenever an
// instance it may run on holds it (the simulator routes it again among the larger ones, as the gateway
// retries a replica's context-length 400), and refused only when none does.

const requestArb = fc.record({
  prompt: fc.integer({ min: 1, max: 2_400 }),
  output: fc.integer({ min: 1, max: 40 }),
  gapMs: fc.integer({ min: 0, max: 300 }),
});

/** Peak KV of a request run whole: its prompt and output, less the last token's. */
const whole = (r: WorkloadRequest) => r.tokens.length + r.outputTokens - 1;

test('property: colocated, mixed KV sizes: served exactly when some instance holds it, on one that does', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 200, max: 3_000 }), { minLength: 2, maxLength: 4 }),
      fc.array(requestArb, { minLength: 1, maxLength: 25 }),
      fc.constantFrom('round-robin', 'least-load', 'e2-plus', 'kv-cost', 'cache-aware', 'e2'),
      (sizes, shapes, name) => {
        const requests = spacedStream(shapes, 10_000);
        const fleet: SimInstance[] = sizes.map((kv) => ({ costModel: simpleCostModel(kv), role: 'mixed' }));
        const policy = createGlobalPolicy(name, { costModel: simpleCostModel(Math.max(...sizes)), seed: 0 });
        const result = simulate({
          policy,
          instances: sizes.length,
          costModel: simpleCostModel(Math.max(...sizes)),
          fleet,
          requests,
          engine: { queuePolicy: 'fcfs' },
        });
        const largest = Math.max(...sizes);
        const refused = new Set(result.refused.map((r) => r.id));
        assert.equal(result.records.length + refused.size, requests.length);
        for (const r of requests) assert.equal(refused.has(r.id), whole(r) > largest, `${r.id}`);
        for (const rec of result.records) {
          const r = requests.find((q) => q.id === rec.id)!;
          assert.ok(whole(r) <= sizes[rec.instance]!, `${rec.id} ran on an instance that holds it`);
          assert.ok(rec.finish >= rec.arrival);
        }
        assert.ok(result.rerouted <= result.records.length);
      },
    ),
    { numRuns: 60 },
  );
});

// One prefill instance large enough for every prompt, and decode instances of random sizes.
const link: KvLink = { class: 'infiniband-200', bandwidth: 25e9, latency: 10e-6 };

test('property: disaggregated, decode instances of mixed KV sizes: a decode goes to one that holds it', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 500, max: 4_000 }), { minLength: 2, maxLength: 3 }),
      fc.array(requestArb, { minLength: 1, maxLength: 15 }),
      fc.constantFrom('distserve', 'splitwise'),
      (decodeSizes, shapes, name) => {
        const requests = spacedStream(shapes, 10_000);
        const big = costModelPreset('mistral-7b-a6000', { kvCapacityTokens: 10_000 });
        const fleet: SimInstance[] = [
          { costModel: big, role: 'prefill' as Role },
          ...decodeSizes.map((kv) => ({
            costModel: costModelPreset('mistral-7b-a6000', { kvCapacityTokens: kv }),
            role: 'decode' as Role,
          })),
        ];
        const result = simulate({
          policy: createGlobalPolicy(name, { costModel: big }),
          instances: fleet.length,
          costModel: big,
          fleet,
          requests,
          kvTransfer: { placement: { nodeOf: (i) => i, nodeLink: link, network: link }, mode: 'serialized' },
        });
        const largest = Math.max(...decodeSizes);
        const refused = new Set(result.refused.map((r) => r.id));
        assert.equal(result.records.length + refused.size, requests.length);
        for (const rec of result.records) {
          const r = requests.find((q) => q.id === rec.id)!;
          assert.ok(rec.finish >= rec.arrival);
          // Where it decoded (a decode instance; or one Splitwise borrowed to run it whole) holds its
          // prompt and output; a one-token answer may end on the prefill instance.
          const ranOn = rec.decodeInstance >= 0 ? rec.decodeInstance : rec.instance;
          if (ranOn === 0) assert.equal(r.outputTokens, 1, `${rec.id} ended on the prefill instance`);
          else assert.ok(whole(r) <= decodeSizes[ranOn - 1]!, `${rec.id} fits where it decoded`);
        }
        // A request the largest decode instance holds is never refused.
        for (const r of requests) if (whole(r) <= largest) assert.ok(!refused.has(r.id), `${r.id} served`);
        assert.equal(result.engines[0]!.heldKvTokens, 0, 'every KV left the prefill instance');
      },
    ),
    { numRuns: 40 },
  );
});
