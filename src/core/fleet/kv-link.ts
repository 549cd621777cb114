/**
 * KV transfer between a prefill instance and a decode instance (prefill/decode disaggregation): link
 * classes with latency and bandwidth, the time a transfer takes, which link joins two instances, and when
 * the KV is available on the decode side under each transfer mode. Pure: times in seconds, bytes in bytes.
 */

/** The kinds of link a KV cache can travel over. */
export const linkClassNames = [
  'nvlink',
  'infiniband-200',
  'infiniband-400',
  'ethernet-25g',
  'pcie-host',
  'emulated',
] as const;
export type LinkClass = (typeof linkClassNames)[number];

export interface KvLink {
  readonly class: LinkClass;
  /** Bytes per second, one direction. */
  readonly bandwidth: number;
  /** Seconds paid once per transfer (setup, wire and switch), before the bytes flow. */
  readonly latency: number;
}

export interface KvLinkClass extends KvLink {
  /** Where the figures come from. */
  readonly source: string;
}

const GBPS = 1e9 / 8; // bytes per second in one gigabit per second

/*
 * Bandwidths are the sources' nominal figures, without protocol efficiency, except pcie-host. Latencies are
 * order-of-magnitude assumptions of ours (no seed measures them): a few microseconds of wire and switch plus
 * a kernel or RDMA launch; next to the bandwidth term they matter only for transfers of a few tokens.
 * Everything here can be overridden per fleet (FleetConfig.links).
 */
export const KV_LINK_CLASSES: Readonly<Record<LinkClass, KvLinkClass>> = {
  nvlink: {
    class: 'nvlink',
    bandwidth: 600e9,
    latency: 10e-6,
    source:
      'DistServe §3.3 (seed 004): "the peak bandwidth between A100 GPUs is 600 GB/s" over intra-node NVLink. ' +
      "NVIDIA's 600 GB/s is the A100's total over both directions (300 GB/s each way), so this is optimistic by " +
      'up to 2x for a one-way transfer; H100 NVLink is 900 GB/s (TetriInfer Fig. 9)',
  },
  'infiniband-200': {
    class: 'infiniband-200',
    bandwidth: 200 * GBPS,
    latency: 10e-6,
    source: 'Splitwise Table I and §VI-A (seed 004): 200 Gbps InfiniBand between DGX-A100 machines',
  },
  'infiniband-400': {
    class: 'infiniband-400',
    bandwidth: 400 * GBPS,
    latency: 10e-6,
    source: 'Splitwise Table I and §VI-A (seed 004): 400 Gbps InfiniBand between DGX-H100 machines',
  },
  'ethernet-25g': {
    class: 'ethernet-25g',
    bandwidth: 25 * GBPS,
    latency: 50e-6,
    source:
      "DistServe §6.1 (seed 004): the testbed's cross-node bandwidth is 25 Gbps, the slow case that made " +
      'DistServe place prefill and decode segments on one node',
  },
  'pcie-host': {
    class: 'pcie-host',
    bandwidth: 25e9,
    latency: 20e-6,
    source:
      'PCIe Gen4 x16 (PCI-SIG: 16 GT/s per lane, 128b/130b, 31.5 GB/s raw per direction); 25 GB/s effective is ' +
      'our assumption (~80% of raw after packet overheads) for a copy staged through pinned host memory with ' +
      "its two hops pipelined (TetriInfer's Indirect link)",
  },
  emulated: {
    class: 'emulated',
    bandwidth: 200 * GBPS,
    latency: 0,
    source:
      'TetriInfer §4 (seed 004): the decode instance sleeps KV size / emulated bandwidth; 200 Gbps is its TS-RoCE ' +
      'setup. Set the bandwidth per fleet to emulate another link',
  },
};

export function isLinkClass(name: string): name is LinkClass {
  return (linkClassNames as readonly string[]).includes(name);
}

/** A link of `linkClass`, with the class's figures unless overridden. */
export function kvLink(
  linkClass: LinkClass,
  overrides: { readonly bandwidth?: number | undefined; readonly latency?: number | undefined } = {},
): KvLink {
  const base = KV_LINK_CLASSES[linkClass];
  const bandwidth = overrides.bandwidth ?? base.bandwidth;
  const latency = overrides.latency ?? base.latency;
  if (!(Number.isFinite(bandwidth) && bandwidth > 0))
    throw new Error(`${linkClass}: bandwidth must be a positive number of bytes/s, got ${bandwidth}`);
  if (!(Number.isFinite(latency) && latency >= 0))
    throw new Error(`${linkClass}: latency must be a non-negative number of seconds, got ${latency}`);
  return { class: linkClass, bandwidth, latency };
}

/** Tokens whose KV must move: those the decode instance does not already cache (never negative). */
export function tokensToMove(kvTokens: number, cachedOnDecode = 0): number {
  return Math.max(0, kvTokens - Math.max(0, cachedOnDecode));
}

/**
 * Seconds to move the KV of `kvTokens` tokens, of which the decode instance already caches
 * `cachedOnDecode` (a prefix: only the rest moves): latency + bytes / bandwidth, and 0 when nothing moves.
 */
export function transferSeconds(
  link: KvLink,
  kvTokens: number,
  kvBytesPerToken: number,
  cachedOnDecode = 0,
): number {
  const tokens = tokensToMove(kvTokens, cachedOnDecode);
  if (tokens === 0) return 0;
  return link.latency + (tokens * kvBytesPerToken) / link.bandwidth;
}

/** Where two instances sit and what joins them. */
export interface LinkPlacement {
  /** The node (machine) of each instance, by instance id. */
  readonly nodeOf: (instance: number) => number;
  /** The link between instances on one node (NVLink in a DGX; pcie-host where GPUs have no NVLink). */
  readonly nodeLink: KvLink;
  /** The link between nodes: the fleet's network. */
  readonly network: KvLink;
}

/** The link the KV takes from `from` to `to`: none for one instance, the node's link on one node, else the network. */
export function linkBetween(placement: LinkPlacement, from: number, to: number): KvLink | null {
  if (from === to) return null;
  return placement.nodeOf(from) === placement.nodeOf(to) ? placement.nodeLink : placement.network;
}

/**
 * How the KV moves:
 * - `serialized` (Splitwise Fig. 11a): the transfer starts when the prefill ends and must end before the
 *   second token (the first decode step) can run.
 * - `layer-wise` (Splitwise Fig. 11b): each layer's KV is sent as soon as the layer is computed,
 *   overlapped with the next layers; only a residue remains after the prefill.
 * - `pull` (DistServe §4.3): the decode instance fetches the KV when it has memory for it; until then the
 *   prefill instance holds it. The wait is the simulator's to decide; this model times the transfer from
 *   the moment of the pull.
 */
export const transferModeNames = ['serialized', 'layer-wise', 'pull'] as const;
export type TransferMode = (typeof transferModeNames)[number];

export function isTransferMode(name: string): name is TransferMode {
  return (transferModeNames as readonly string[]).includes(name);
}

export interface KvHandoff {
  readonly mode: TransferMode;
  /** When the prefill's last layer finished (the first token exists), on the caller's clock. */
  readonly prefillEnd: number;
  /** How long the prefill computed the request's KV (layer-wise overlaps the transfer with it). */
  readonly prefillSeconds: number;
  /** Prompt tokens whose KV the decode side needs (the whole prompt). */
  readonly kvTokens: number;
  /** Of those, the prefix the decode instance already caches: it does not move. Default 0. */
  readonly cachedOnDecode?: number;
  readonly kvBytesPerToken: number;
  /** The model's layers (layer-wise sends one layer's share at a time). */
  readonly layers: number;
  /** The link, or null when prefill and decode are one instance (nothing moves). */
  readonly link: KvLink | null;
  /** `pull` only: when the decode instance pulls (it has the memory); default and floor: prefillEnd. */
  readonly pullAt?: number;
}

export interface KvArrival {
  /** When the whole KV is on the decode instance: its first decode step may start then. */
  readonly availableAt: number;
  /** Seconds the transfer takes on its own (latency + bytes / bandwidth): the `serialized` delay. */
  readonly transferSeconds: number;
  /** Seconds between the prefill's end and availability (the delay the request sees). */
  readonly exposedSeconds: number;
  /** Tokens whose KV moved. */
  readonly tokensMoved: number;
}

/**
 * When the KV is available on the decode side.
 *
 * - serialized: prefillEnd + T, where T = transferSeconds (latency + bytes / bandwidth).
 * - pull: max(pullAt, prefillEnd) + T.
 * - layer-wise: the prefill's L layers take P/L each and layer i's KV (T_b/L of bandwidth time, T_b = bytes /
 *   bandwidth) is sent when layer i ends, one layer after another on the link. The last send ends at
 *   max(P + T_b/L, P/L + T_b) after the prefill started (the link either keeps up, and only the last layer's
 *   share is left, or it is the bottleneck from the first layer on); the latency is paid once, the sends being
 *   pipelined. The residue after the prefill is therefore latency + max(T_b/L, T_b - P(L-1)/L): T_b/L when the
 *   link keeps up with the layers. This is our formula for Splitwise's description (§IV-C, an asynchronous
 *   send after each layer overlapped with the next layer's compute), assuming layers of equal time; Splitwise
 *   measured a near-constant residue of ~8 ms (A100, 200 Gbps) and ~5 ms (H100, 400 Gbps) (§VI-A, Fig. 14).
 */
export function kvArrival(handoff: KvHandoff): KvArrival {
  const { mode, prefillEnd, link } = handoff;
  const tokensMoved = link === null ? 0 : tokensToMove(handoff.kvTokens, handoff.cachedOnDecode);
  if (link === null || tokensMoved === 0) {
    const start = mode === 'pull' ? Math.max(prefillEnd, handoff.pullAt ?? prefillEnd) : prefillEnd;
    return { availableAt: start, transferSeconds: 0, exposedSeconds: start - prefillEnd, tokensMoved };
  }
  const bytesSeconds = (tokensMoved * handoff.kvBytesPerToken) / link.bandwidth;
  const whole = link.latency + bytesSeconds;
  let availableAt: number;
  if (mode === 'serialized') {
    availableAt = prefillEnd + whole;
  } else if (mode === 'pull') {
    availableAt = Math.max(prefillEnd, handoff.pullAt ?? prefillEnd) + whole;
  } else {
    const layers = Math.max(1, Math.floor(handoff.layers));
    const prefill = Math.max(0, handoff.prefillSeconds);
    const residue = Math.max(bytesSeconds / layers, bytesSeconds - (prefill * (layers - 1)) / layers);
    availableAt = prefillEnd + link.latency + residue;
  }
  return { availableAt, transferSeconds: whole, exposedSeconds: availableAt - prefillEnd, tokensMoved };
}
