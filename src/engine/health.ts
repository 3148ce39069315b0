import type { WorkerRecord } from "../store/port.ts";
import type { EngineContext } from "./engine-context.ts";
import { checkerHealth, type CheckerHealth } from "./freshness/report.ts";
import { WORKER_ALIVE_MS } from "./metrics/store-facts.ts";
import type { BrokenFile } from "./project/catalog.ts";

export interface Health {
  /** "ok"; "degraded" when pipeline files did not load; the checker's status when it is not alive. */
  status: "ok" | "degraded" | CheckerHealth["status"];
  checker: CheckerHealth;
  brokenFiles: BrokenFile[];
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
   * Is this installation healthy: the scheduler's checker alive, and every pipeline file loaded?
   * Every surface (CLI, HTTP) shows this; `brokenFiles` are those this process sees.
   */
  async installation(): Promise<Health> {
    const checker = await this.checker();
    const brokenFiles = this.#e.catalog.brokenFiles();
    return { status: checker.status === "ok" ? (brokenFiles.length ? "degraded" : "ok") : checker.status, checker, brokenFiles };
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
