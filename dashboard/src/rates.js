// Rates of a node's byte counters between two reads (pure: unit-tested in
// tests/unit.test.mjs).

/**
 * Each node's transfer rates (bytes per second, sent and received) between
 * the counters of `prev` (`{at, nodes}`) and `nodes` read at `at` (ms);
 * null for a node not in `prev` or whose counters went back (restarted).
 */
export function rates(prev, nodes, at) {
  const out = {};
  for (const n of nodes) {
    const before = prev && prev.nodes[n.node_id];
    const secs = prev ? (at - prev.at) / 1000 : 0;
    const sent = before && n.object_bytes_sent - before.sent;
    const received = before && n.object_bytes_received - before.received;
    out[n.node_id] = before && secs > 0 && sent >= 0 && received >= 0
      ? { sent: sent / secs, received: received / secs } : null;
  }
  return out;
}
