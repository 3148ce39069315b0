import { Histogram } from "prom-client";
import { TICK_BUCKETS, type ProcessMetric } from "./process-metric.ts";

/**
 * `idem_claim_duration_seconds`: how long this worker's claims took in the store, from
 * `worker:claimed`; a claim that also recorded results (one transaction) is told apart, as it
 * writes more.
 */
export const claimDuration: ProcessMetric = (registry, events) => {
  const claims = new Histogram<"with_results">({
    name: "idem_claim_duration_seconds",
    help: "How long this worker's claims took in the state store, by whether the same call recorded results",
    labelNames: ["with_results"],
    buckets: TICK_BUCKETS,
    registers: [registry],
  });
  return events.on("worker:claimed", (c) => claims.observe({ with_results: String(c.finishes > 0) }, c.durationMs / 1000));
};
