/**
 * The state store as the engine sees it: operations named for what they mean, each one
 * transaction. Adapters (SQLite, PostgreSQL) implement it; one contract suite tests them all.
 * Times are epoch milliseconds; the store never reads a clock of its own.
 *
 * The port is split by role (one file per role under `port/`, each with its record types); an
 * engine part or surface that needs one role takes that role, not the whole `Store`.
 */
import type { RunStore } from "./port/runs.ts";
import type { AttemptStore } from "./port/attempts.ts";
import type { WorkerStore } from "./port/workers.ts";
import type { SchedulingStore } from "./port/scheduling.ts";
import type { DatasetStore } from "./port/datasets.ts";
import type { PoolStore } from "./port/pools.ts";
import type { BackfillStore } from "./port/backfills.ts";
import type { FreshnessStore } from "./port/freshness.ts";
import type { WatermarkRecordStore } from "./port/watermarks.ts";
import type { AuditStore } from "./port/audit.ts";
import type { TokenStore } from "./port/tokens.ts";
import type { ChangeFeedStore } from "./port/changes.ts";
import type { HistoryReads } from "./port/history.ts";
import type { MetricReads } from "./port/metrics.ts";
import type { MappingReads } from "./port/mapping.ts";
import type { ExternalJobStore } from "./port/external-jobs.ts";

export * from "./port/runs.ts";
export * from "./port/attempts.ts";
export * from "./port/workers.ts";
export * from "./port/scheduling.ts";
export * from "./port/datasets.ts";
export * from "./port/pools.ts";
export * from "./port/backfills.ts";
export * from "./port/freshness.ts";
export * from "./port/watermarks.ts";
export * from "./port/audit.ts";
export * from "./port/tokens.ts";
export * from "./port/changes.ts";
export * from "./port/history.ts";
export * from "./port/metrics.ts";
export * from "./port/mapping.ts";
export * from "./port/external-jobs.ts";

export interface Store
  extends RunStore,
    AttemptStore,
    WorkerStore,
    SchedulingStore,
    DatasetStore,
    PoolStore,
    BackfillStore,
    FreshnessStore,
    WatermarkRecordStore,
    AuditStore,
    TokenStore,
    ChangeFeedStore,
    HistoryReads,
    MetricReads,
    MappingReads,
    ExternalJobStore {
  /** Brings the schema to the latest version. Safe to call on every start. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/** Raised by any adapter for a request the store refuses (run busy, summary too large, ...). */
export class StoreConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StoreConflictError";
  }
}
