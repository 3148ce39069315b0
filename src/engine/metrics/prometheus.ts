import { Gauge, Registry, collectDefaultMetrics } from "prom-client";
import type { EngineEvents } from "../events/engine-events.ts";
import { PROCESS_METRICS } from "./process/index.ts";
import type { StoreFacts } from "./store-facts.ts";

/** A process's metrics, in Prometheus' text exposition format. */
export interface EngineMetrics {
  scrape(): Promise<{ contentType: string; text: string }>;
  /** Stops listening to the process's facts. */
  close(): void;
}

export interface MetricSources {
  /** The process's events, which its own metrics (`process/`) subscribe to. */
  events: EngineEvents;
  storeFacts(): Promise<StoreFacts>;
  taskHostsAlive(): number;
}

/**
 * The metrics of one process on a registry of its own. The store's facts are gauges set from one
 * reading of the store per scrape (scrapes take turns, so two never mix their readings); the
 * process's own facts are histograms fed by the engine's events as they happen (`process/`). docs/observability.md lists them all.
 */
export function prometheusMetrics(sources: MetricSources): EngineMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "idem_" });
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Gauge<L>({ name, help, labelNames, registers: [registry] });

  const store = {
    up: gauge("idem_store_up", "1 when this scrape read the state store, 0 when the read failed (the store's facts are then absent)", []),
    readSeconds: gauge("idem_store_read_seconds", "How long this scrape's reads of the state store took", []),
    runs: gauge("idem_runs", "Runs queued or running, by pipeline and state", ["pipeline", "state"]),
    recentRuns: gauge("idem_runs_recent", "Runs whose interval started in the last 7 days, by pipeline and state", ["pipeline", "state"]),
    taskInstances: gauge("idem_task_instances", "Task instances of the runs queued or running, by pipeline, task and state", ["pipeline", "task", "state"]),
    queued: gauge("idem_queued_task_instances", "Task instances queued (ready, waiting for a worker or slots), by pool; (none): no pool", ["pool"]),
    oldestQueued: gauge("idem_queued_oldest_age_seconds", "How long the longest-queued task instance has waited, by pool; 0 when none waits", ["pool"]),
    poolSlots: gauge("idem_pool_slots", "The slots of each pool", ["pool"]),
    poolUsed: gauge("idem_pool_slots_used", "The slots of each pool held by running task instances", ["pool"]),
    lag: gauge("idem_promise_freshness_lag_seconds", "Seconds past the deadline of the promise's oldest business date of the last 7 days still unpublished; 0 when none", ["pipeline", "dataset"]),
    unpublished: gauge("idem_promise_unpublished_business_dates", "Business dates of the last 7 days past the promise's SLO (or deadline) and not published", ["pipeline", "dataset"]),
    days: gauge("idem_promise_business_dates", "Business dates of the last 7 days by freshness status (on_time, late, missed, not_yet_due)", ["pipeline", "dataset", "status"]),
    incidents: gauge("idem_incidents_open", "Unresolved incidents by kind, pipeline (empty: the installation's) and state (open; acknowledged: a person took it and its snooze has not ended)", ["kind", "pipeline", "state"]),
    backfills: gauge("idem_backfills", "Backfills running or paused, by pipeline", ["pipeline", "state"]),
    backfillRuns: gauge("idem_backfill_runs", "The intervals of live backfills by progress: planned, not_started, queued, running, succeeded, failed", ["pipeline", "state"]),
    leaseAge: gauge("idem_lease_age_seconds", "Seconds since the scheduler's or the checker's lease was last renewed, or since the newest worker heartbeat", ["role"]),
    leaseCurrent: gauge("idem_lease_current", "1 while the role's lease (or a worker's heartbeat) is current, 0 when it lapsed", ["role"]),
  };
  const taskHosts = gauge("idem_task_hosts", "Task hosts alive in this process (the processes that run task code)", []);
  const unsubscribe = PROCESS_METRICS.map((metric) => metric(registry, sources.events));

  const setStoreFacts = (facts: StoreFacts | null) => {
    for (const g of Object.values(store)) g.reset();
    store.up.set(facts ? 1 : 0);
    if (!facts) return;
    for (const r of facts.liveRuns) store.runs.set(r.labels, r.count);
    for (const r of facts.recentRuns) store.recentRuns.set(r.labels, r.count);
    for (const t of facts.taskInstances) store.taskInstances.set(t.labels, t.count);
    for (const q of facts.queues) {
      store.queued.set({ pool: q.pool }, q.queued);
      store.oldestQueued.set({ pool: q.pool }, q.oldestAgeSeconds);
    }
    for (const p of facts.pools) {
      store.poolSlots.set({ pool: p.pool }, p.slots);
      store.poolUsed.set({ pool: p.pool }, p.used);
    }
    for (const p of facts.promises) {
      const labels = { pipeline: p.pipeline, dataset: p.dataset };
      store.lag.set(labels, p.lagSeconds);
      store.unpublished.set(labels, p.unpublished);
      for (const [status, n] of Object.entries(p.days)) store.days.set({ ...labels, status }, n);
    }
    for (const i of facts.openIncidents) store.incidents.set(i.labels, i.count);
    for (const b of facts.backfills) store.backfills.set(b.labels, b.count);
    for (const b of facts.backfillRuns) store.backfillRuns.set(b.labels, b.count);
    for (const l of facts.leases) {
      store.leaseAge.set({ role: l.role }, l.ageSeconds);
      store.leaseCurrent.set({ role: l.role }, l.current ? 1 : 0);
    }
  };

  let turn: Promise<unknown> = Promise.resolve();
  const scrapeNow = async () => {
    const began = performance.now();
    let facts: StoreFacts | null = null;
    try {
      facts = await sources.storeFacts();
    } catch {
      // The process's own metrics still answer; idem_store_up says the store did not.
    }
    setStoreFacts(facts);
    if (facts) store.readSeconds.set((performance.now() - began) / 1000);
    taskHosts.set(sources.taskHostsAlive());
    return { contentType: registry.contentType, text: await registry.metrics() };
  };

  return {
    scrape() {
      const next = turn.then(scrapeNow, scrapeNow);
      turn = next.catch(() => undefined);
      return next;
    },
    close: () => {
      for (const off of unsubscribe) off();
    },
  };
}
