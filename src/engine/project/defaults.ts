import { DEFAULT_BUNDLE_RETENTION, type BundleRetention } from "../../core/policy/bundle-retention.ts";

/**
 * The numbers a project gets when its idem.config.ts does not set them, in one place: the
 * config's resolution, the engine built without a config (tests, `idem/testing`) and each
 * process's own fallback read them here, so a default is never two numbers at two sites.
 */
export const DEFAULTS = {
  /** Task instances a worker runs at once. */
  concurrency: 4,
  /** How long a worker's claim on an attempt lives without a heartbeat. */
  workerLeaseMs: 30_000,
  /** How long a worker waits for running attempts at shutdown before handing them back. */
  workerGraceMs: 30_000,
  /** How long the leading scheduler's lease lives without a renewal. */
  schedulerLeaseMs: 15_000,
  /** A scheduler's tick when nothing wakes it sooner. */
  schedulerTickMs: 1_000,
  /** The freshness checker's pass. */
  checkerIntervalMs: 15_000,
  /** A checker whose last pass is older than this is reported dead. */
  checkerStaleMs: 60_000,
  /** How long after its fire time an interval with no run is reported as did not run. */
  didNotRunGraceMs: 10 * 60_000,
  /** How long a SQLite statement waits for another process's lock. */
  stateBusyTimeoutMs: 10_000,
  /** How often long-lived processes look at the pipeline files. */
  reloadMs: 2_000,
  /** At most this many messages to one notifier per window; a burst beyond goes in one digest. */
  alertDigest: { after: 5, windowMs: 60_000 },
  /** A notifier failing this many times in a row, or for this long, is an incident. */
  notifierFailing: { after: 3, forMs: 10 * 60_000 },
  /** How often the leading scheduler collects the bundles no run, window or retention rule needs (`collectBundles`). */
  bundleCollectionEveryMs: 24 * 60 * 60_000,
  /** How far a signed dataset webhook's timestamp may be from the server's clock (Stripe's five minutes). */
  datasetWebhookToleranceMs: 5 * 60_000,
} as const;

/** When the leading scheduler collects a pipeline's old bundles, and by which retention rule. */
export interface BundleCollectionSchedule {
  everyMs: number;
  retention: BundleRetention;
}

export function bundleCollectionOf(setting: { everyMs?: number; keepNewest?: number; keepDays?: number } | false | undefined): BundleCollectionSchedule | null {
  if (setting === false) return null;
  return {
    everyMs: setting?.everyMs ?? DEFAULTS.bundleCollectionEveryMs,
    retention: { keepNewest: setting?.keepNewest ?? DEFAULT_BUNDLE_RETENTION.keepNewest, keepDays: setting?.keepDays ?? DEFAULT_BUNDLE_RETENTION.keepDays },
  };
}
