import { StoreUnavailableError } from "../core/model/errors.ts";
import { healthVerdict, type HealthVerdict } from "../core/policy/installation-health.ts";
import type { WorkerRecord } from "../store/port.ts";
import type { EngineContext } from "./engine-context.ts";
import { checkerHealth, type CheckerHealth } from "./freshness/report.ts";
import { WORKER_ALIVE_MS } from "./metrics/store-facts.ts";
import type { BrokenFile } from "./project/catalog.ts";

/** The installation's health: core's verdict, and what it was decided from. */
export interface Health extends HealthVerdict {
  /** The checker and the scheduler as the store says; null when the store could not be read. */
  checker: CheckerHealth | null;
  /** Pipeline files this process could not load. */
  brokenFiles: BrokenFile[];
}

/**
 * How long a health answer waits for the store. A store rides out an outage by retrying (30 s on
 * PostgreSQL), but whoever asks for health (a load balancer, an uptime check) gives up sooner and
 * should hear "out of reach", not nothing. Real time: it is about the asker's patience.
 */
const HEALTH_ANSWER_MS = 5_000;

/** The read's result, or a StoreUnavailableError once `ms` have passed without one. */
async function answeredWithin<T>(read: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreUnavailableError(`the state store did not answer within ${ms / 1000} s`)), ms);
  });
  // The read may still fail after the answer was given: nobody waits for it then.
  read.catch(() => {});
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The installation's processes as the store knows them: the checker, the scheduler's lease, the workers' heartbeats. */
export class InstallationHealth {
  readonly #e: Pick<EngineContext, "store" | "clock" | "catalog">;
  readonly #checkerStaleMs: number;

  constructor(context: Pick<EngineContext, "store" | "clock" | "catalog">, checkerStaleMs: number) {
    this.#e = context;
    this.#checkerStaleMs = checkerStaleMs;
  }

  /** Who runs the checker, how fresh its last pass is, and whether a scheduler leads. */
  async checker(): Promise<CheckerHealth> {
    return checkerHealth(this.#e.store, this.#e.clock.now(), this.#checkerStaleMs);
  }

  /**
   * Is this installation healthy: the store reachable, the checker passing, a scheduler leading,
   * every pipeline file loaded (core's `healthVerdict`)? Every surface translates this one answer;
   * `brokenFiles` are those this process sees. A store out of reach is an answer, not an error.
   */
  async installation(): Promise<Health> {
    const brokenFiles = this.#e.catalog.brokenFiles();
    let checker: CheckerHealth;
    try {
      checker = await answeredWithin(this.checker(), HEALTH_ANSWER_MS);
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      return { ...healthVerdict({ reachable: false, storeError: error.message }), checker: null, brokenFiles };
    }
    const verdict = healthVerdict({ reachable: true, checker, schedulerLive: checker.scheduler.live, brokenFiles: brokenFiles.length });
    return { ...verdict, checker, brokenFiles };
  }

  /** Workers that have sent a heartbeat, with whether they look alive now. */
  async workers(): Promise<(WorkerRecord & { alive: boolean })[]> {
    const now = this.#e.clock.now();
    return (await this.#e.store.listWorkers()).map((w) => ({ ...w, alive: now - w.lastSeen < WORKER_ALIVE_MS }));
  }

  /** Who holds the scheduler's leader lease, and whether it is current. */
  async leadership(): Promise<{ holder: string; term: number; expiresAt: number; renewedAt: number; current: boolean } | null> {
    const lead = await this.#e.store.getLead("scheduler");
    if (!lead) return null;
    return { holder: lead.holder, term: lead.term, expiresAt: lead.expiresAt, renewedAt: lead.renewedAt, current: lead.expiresAt >= this.#e.clock.now() };
  }
}
