import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { kvBytesPerToken } from '../../../src/core/cost-model/instance.ts';
import { MODEL_SHAPES } from '../../../src/core/cost-model/model-shapes.ts';
import {
  KV_LINK_CLASSES,
  kvArrival,
  kvLink,
  type LinkPlacement,
  linkBetween,
  linkClassNames,
  transferModeNames,
  transferSeconds,
} from '../../../src/core/fleet/kv-link.ts';

// Llama-2-13B: 40 layers, 40 KV heads of dimension 128, fp16: 819,200 bytes of KV per token.
const BYTES = kvBytesPerToken(MODEL_SHAPES['llama2-13b']);
const close = (actual: number, expected: number) =>
  assert.ok(Math.abs(actual - expected) <= 1e-12 + 1e-9 * Math.abs(expected), `${actual} != ${expected}`);

test('Llama-2-13B holds 2 x 40 x 40 x 128 x 2 = 819,200 bytes of KV per token', () => {
  assert.equal(BYTES, 819_200);
});

test('512 tokens of Llama-2-13B KV (419,430,400 bytes) on each link class, by hand', () => {
  // bytes / bandwidth + latency
  const expected: Record<string, number> = {
    nvlink: 419_430_400 / 600e9 + 10e-6, // 0.699 ms + 10 us = 0.709 ms
    'infiniband-200': 419_430_400 / 25e9 + 10e-6, // 16.777 ms + 10 us
    'infiniband-400': 419_430_400 / 50e9 + 10e-6, // 8.389 ms + 10 us
    'ethernet-25g': 419_430_400 / 3.125e9 + 50e-6, // 134.218 ms + 50 us = 134.268 ms
    'pcie-host': 419_430_400 / 25e9 + 20e-6, // 16.797 ms
    emulated: 419_430_400 / 25e9, // 16.777 ms, no latency
  };
  for (const name of linkClassNames) {
    close(transferSeconds(kvLink(name), 512, BYTES), expected[name]!);
  }
  close(transferSeconds(kvLink('ethernet-25g'), 512, BYTES), 0.134267728);
  close(transferSeconds(kvLink('nvlink'), 512, BYTES), 0.000709050666666667);
  // 25 Gbps is ~190x slower than NVLink here: the DistServe testbed's reason to keep pairs on one node.
  assert.ok(
    transferSeconds(kvLink('ethernet-25g'), 512, BYTES) / transferSeconds(kvLink('nvlink'), 512, BYTES) > 189,
  );
});

test('cached tokens on the decode side do not move; nothing to move costs nothing', () => {
  const link = kvLink('ethernet-25g');
  close(transferSeconds(link, 512, BYTES, 256), (256 * 819_200) / 3.125e9 + 50e-6); // 67.159 ms
  assert.equal(transferSeconds(link, 512, BYTES, 512), 0);
  assert.equal(transferSeconds(link, 512, BYTES, 900), 0);
  assert.equal(transferSeconds(link, 0, BYTES), 0);
});

test('overrides replace a class figure; bad ones are refused naming the class', () => {
  const link = kvLink('emulated', { bandwidth: 300e9 });
  assert.deepEqual(link, { class: 'emulated', bandwidth: 300e9, latency: 0 });
  assert.equal(kvLink('nvlink', { latency: undefined }).latency, KV_LINK_CLASSES.nvlink.latency);
  assert.throws(() => kvLink('nvlink', { bandwidth: 0 }), /^Error: nvlink: bandwidth must be a positive/);
  assert.throws(() => kvLink('pcie-host', { latency: -1 }), /^Error: pcie-host: latency must be/);
});

test('placement: one instance has no link, one node uses the node link, else the network', () => {
  const placement: LinkPlacement = {
    nodeOf: (id) => Math.floor(id / 2),
    nodeLink: kvLink('nvlink'),
    network: kvLink('infiniband-400'),
  };
  assert.equal(linkBetween(placement, 1, 1), null);
  assert.equal(linkBetween(placement, 0, 1)?.class, 'nvlink');
  assert.equal(linkBetween(placement, 1, 2)?.class, 'infiniband-400');
});

test('serialized, layer-wise and pull availability for 512 tokens after a 50 ms prefill, by hand', () => {
  const base = { prefillEnd: 10, prefillSeconds: 0.05, kvTokens: 512, kvBytesPerToken: BYTES, layers: 40 };
  const slow = kvLink('ethernet-25g');
  const ib = kvLink('infiniband-200');

  // serialized: prefillEnd + latency + bytes / bandwidth
  const serialized = kvArrival({ ...base, mode: 'serialized', link: slow });
  close(serialized.availableAt, 10 + 0.134267728);
  close(serialized.exposedSeconds, 0.134267728);
  assert.equal(serialized.tokensMoved, 512);

  // layer-wise, link keeps up (IB-200: 16.78 ms of bytes < 50 ms of prefill): residue = latency + T_b / 40
  const keepsUp = kvArrival({ ...base, mode: 'layer-wise', link: ib });
  close(keepsUp.exposedSeconds, 10e-6 + 0.016777216 / 40); // 0.429 ms
  close(keepsUp.transferSeconds, 0.016787216);

  // layer-wise, link is the bottleneck (25 Gbps: 134.2 ms > 50 ms): residue = latency + T_b - P x 39/40
  const bottleneck = kvArrival({ ...base, mode: 'layer-wise', link: slow });
  close(bottleneck.exposedSeconds, 50e-6 + 0.134217728 - 0.05 * (39 / 40)); // 85.518 ms
  assert.ok(bottleneck.availableAt < serialized.availableAt);

  // pull: from the pull, not from the prefill's end; a pull before the end waits for it
  close(kvArrival({ ...base, mode: 'pull', link: slow, pullAt: 10.2 }).availableAt, 10.2 + 0.134267728);
  close(kvArrival({ ...base, mode: 'pull', link: slow, pullAt: 9 }).availableAt, 10 + 0.134267728);
  close(kvArrival({ ...base, mode: 'pull', link: slow }).availableAt, 10 + 0.134267728);

  // a decode instance that caches 256 tokens of the prompt receives only the other 256
  const half = kvArrival({ ...base, mode: 'serialized', link: slow, cachedOnDecode: 256 });
  assert.equal(half.tokensMoved, 256);
  close(half.exposedSeconds, 50e-6 + 0.067108864);

  // no link (same instance) or everything cached: available at the prefill's end (or the pull)
  assert.equal(kvArrival({ ...base, mode: 'serialized', link: null }).availableAt, 10);
  assert.equal(kvArrival({ ...base, mode: 'layer-wise', link: ib, cachedOnDecode: 512 }).exposedSeconds, 0);
  assert.equal(kvArrival({ ...base, mode: 'pull', link: null, pullAt: 11 }).availableAt, 11);
});

const linkArb = fc.record({
  class: fc.constantFrom(...linkClassNames),
  bandwidth: fc.double({ min: 1e6, max: 1e13, noNaN: true }),
  latency: fc.double({ min: 0, max: 1e-2, noNaN: true }),
});

test('property: transfer time never decreases with tokens, never increases with cached tokens', () => {
  fc.assert(
    fc.property(
      linkArb,
      fc.integer({ min: 0, max: 200_000 }),
      fc.integer({ min: 0, max: 200_000 }),
      fc.integer({ min: 0, max: 200_000 }),
      fc.integer({ min: 1, max: 2_000_000 }),
      (link, tokens, more, cached, bytes) => {
        assert.ok(transferSeconds(link, tokens + more, bytes) >= transferSeconds(link, tokens, bytes));
        assert.ok(transferSeconds(link, tokens, bytes, cached) <= transferSeconds(link, tokens, bytes));
        assert.ok(
          transferSeconds(link, tokens, bytes, cached + more) <= transferSeconds(link, tokens, bytes, cached),
        );
      },
    ),
  );
});

test('property: every mode makes the KV available no earlier than the prefill end, and layer-wise <= serialized', () => {
  fc.assert(
    fc.property(
      linkArb,
      fc.integer({ min: 0, max: 100_000 }),
      fc.integer({ min: 0, max: 100_000 }),
      fc.double({ min: 0, max: 10, noNaN: true }),
      fc.integer({ min: 1, max: 128 }),
      fc.double({ min: 0, max: 5, noNaN: true }),
      (link, kvTokens, cachedOnDecode, prefillSeconds, layers, pullDelay) => {
        const base = {
          prefillEnd: 100,
          prefillSeconds,
          kvTokens,
          cachedOnDecode,
          kvBytesPerToken: BYTES,
          layers,
          link,
        };
        const at = Object.fromEntries(
          transferModeNames.map((mode) => [
            mode,
            kvArrival({ ...base, mode, pullAt: 100 + pullDelay }).availableAt,
          ]),
        );
        for (const mode of transferModeNames) assert.ok(at[mode]! >= 100);
        assert.ok(at['layer-wise']! <= at['serialized']! + 1e-12);
        assert.ok(at['pull']! >= at['serialized']! - 1e-12);
      },
    ),
  );
});
