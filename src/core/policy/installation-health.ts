/**
 * Is the installation healthy? One answer, which every surface translates: `GET /health` of the
 * web server and of each daemon's health port (200 or 503), `GET /api/v1/health`, `idem health`
 * (exit 0 or 1) and the UI's health page.
 */

/** What the answer is decided from, as read from the store now; or that the store could not be asked. */
export type HealthFacts =
  | { reachable: false; storeError: string }
  | {
      reachable: true;
      /** The freshness checker: passing, its last pass older than allowed, or never run; and the checker's sentence. */
      checker: { status: "ok" | "stale" | "none"; message: string };
      /** A scheduler leads (one that creates scheduled runs, within its lease). */
      schedulerLive: boolean;
      /** Pipeline files that did not load. */
      brokenFiles: number;
    };

/**
 * The problem that matters first, or "ok": the store out of reach, then nobody checking the
 * promises (never ran, or stale: no alert can go out), then no scheduler (nothing is created),
 * then pipeline files that did not load ("degraded": their pipelines do not run).
 */
export type HealthStatus = "ok" | "unreachable" | "none" | "stale" | "no_scheduler" | "degraded";

export interface HealthVerdict {
  status: HealthStatus;
  /** Only "ok" is healthy: anything else is 503, exit 1. */
  healthy: boolean;
  /** One sentence: the checker's and the scheduler's state, or why the store could not be read; and the files that did not load. */
  message: string;
}

export function healthVerdict(facts: HealthFacts): HealthVerdict {
  if (!facts.reachable) return { status: "unreachable", healthy: false, message: facts.storeError };
  const status: HealthStatus =
    facts.checker.status !== "ok" ? facts.checker.status
      : !facts.schedulerLive ? "no_scheduler"
        : facts.brokenFiles > 0 ? "degraded"
          : "ok";
  const message = facts.checker.message + (facts.brokenFiles > 0 ? `; ${facts.brokenFiles} pipeline file(s) did not load` : "");
  return { status, healthy: status === "ok", message };
}
