import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { E2PlusInstanceCost, E2PlusOptions } from '../../../../src/core/policies/e2-plus/options.ts';
import { E2PlusPolicy } from '../../../../src/core/policies/e2-plus/policy.ts';
import type { RouteDecision } from '../../../../src/core/types.ts';
import { concat, seq, simpleCostModel } from '../../../helpers/simple-cost-model.ts';

// The sorting study's three options (docs/e2.md step 17). Cost model: an iteration costs 1 ms per
// new token (a decode step of B requests: 0.001 B s; a 512-token chunk: 0.512 s); output before any
// finish: 45 tokens; chunk budget 512.
function plus(instances: number, options: Partial<E2PlusOptions> = {}): E2PlusPolicy {
  const p = new E2PlusPolicy({ costModel: simpleCostModel(), evictionCost: false, ...options });
  for (let i = 0; i < instances; i++) p.instanceAdded(i, { kvCapacityTokens: Number.POSITIVE_INFINITY }, 0);
  return p;
}

let nextId = 0;
function route(
  p: E2PlusPolicy,
  tokens: Uint32Array,
  now = 0,
): RouteDecision<E2PlusInstanceCost> & { id: string } {
  const id = `s${nextId++}`;
  return { ...p.route({ id, tokens, arrival: now }, now), id };
}

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);
const cost = (d: RouteDecision<E2PlusInstanceCost>, i: number) => d.costs.find((c) => c.instance === i)!;

test('decodeMeets: the decode is priced at the batch it meets, not every request in flight', () => {
  for (const decodeMeets of [false, true]) {
    const p = plus(1, { decodeMeets });
    route(p, seq(100, 0)); // queued, 0 cached: behind an lpm request that has the prefix cached
    const d = route(p, concat(seq(100, 0), seq(20, 500)));
    // Off: batch = 1 in flight, 45 x 0.002 + 1 x 45 x 0.001. On: nothing decodes by then, 45 x 0.001.
    close(cost(d, 0).decode, decodeMeets ? 0.045 : 0.135, `decodeMeets ${decodeMeets}`);
  }
});

test('prefillBeside: every prefill chunk also steps the decoding requests; the queue keeps its standalone seconds', () => {
  for (const prefillBeside of [false, true]) {
    const p = plus(1, { prefillBeside, laterArrivals: false, decodeEnds: false });
    const a = route(p, seq(100, 0));
    p.requestFirstToken(a.id, 0); // decoding: each chunk's iteration takes 1 ms more
    route(p, seq(256, 1000)); // queued ahead: 0.256 s alone, half a chunk
    const d = route(p, seq(200, 5000));
    const extra = prefillBeside ? 0.001 : 0;
    close(cost(d, 0).queued, 0.256 + (256 / 512) * extra, `queued, prefillBeside ${prefillBeside}`);
    close(cost(d, 0).prefill, 0.2 + (200 / 512) * extra, `prefill, prefillBeside ${prefillBeside}`);
    close(p.queuedPrefillOf(0), 0.456, 'the queue as the flights hold it');
  }
});

test('decodeBeside: the decode runs beside the chunks of those expected to queue behind the request', () => {
  const decode = (decodeBeside: boolean) => {
    const p = plus(1, { decodeBeside, laterArrivals: false, decodeEnds: false });
    route(p, seq(512, 0));
    route(p, seq(512, 1000));
    return cost(route(p, seq(10, 5000)), 0).decode;
  };
  // 2 routed in the first second: 2 arrivals/s x 1.024 s queued = 2.048 behind, of 512 tokens each
  // (2.048 chunks, fewer than 45 steps); a chunk adds 0.512 s to a step beside the 2 that decode then.
  close(decode(true) - decode(false), 2.048 * 0.512, 'decode beside chunks');
});
