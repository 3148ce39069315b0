import type { WatchdogStatus } from "../events/process-status.ts";
import { EngineEvents } from "../events/engine-events.ts";
import type { Clock } from "../../core/model/clock.ts";
import type { Pipeline } from "../../core/pipeline/types.ts";
import { FreshnessChecker, type CheckerStore, type CheckResult } from "./checker.ts";
import { AlertDispatcher } from "./alert-dispatcher.ts";
import { incidentTraits } from "./incident-traits.ts";
import type { NotifierConfig } from "../project/config.ts";
import type { AlertRoute } from "../../core/policy/alert-routing.ts";
import type { DigestPolicy, FailingPolicy } from "../../core/policy/alert-delivery.ts";
import { DEFAULTS } from "../project/defaults.ts";

/** The lease role of the watchdog: one process at a time checks promises and delivers alerts. */
export const CHECKER_ROLE = "checker";

export interface WatchdogOptions {
  store: CheckerStore;
  clock: Clock;
  /** Read at every pass: a watchdog checks the pipelines as they are after a reload. */
  pipelines: readonly Pipeline[] | (() => readonly Pipeline[]);
  /** Who this is, shown by `idem health`: "worker host:pid:random". */
  holder: string;
  notifiers: Readonly<Record<string, NotifierConfig>>;
  defaultNotify?: readonly string[];
  /** Rules choosing notifiers by pipeline, dataset, owner, severity and kind. */
  routes?: readonly AlertRoute[];
  /** Bursts to one notifier become one digest; null: never. Default 5 messages per 60 s. */
  digest?: DigestPolicy | null;
  /** When a notifier that keeps failing is an incident. Default 3 failures in a row or 10 minutes. */
  failing?: FailingPolicy;
  /** The UI's address, for links in alerts. */
  uiUrl?: string | null;
  /** True while this process's own scheduler has yet to try the lead (see the checker). */
  schedulerStarting?: () => boolean;
  /** How often the checker passes. Default 15 s. */
  intervalMs?: number;
  /** The "did not run" and "scheduler down" grace. Default 10 minutes. */
  graceMs?: number;
  /** A watchdog that stops passing for this long is replaced by another process's. Default 3 intervals. */
  leaseMs?: number;
  /** How often alerts are delivered while this process holds the checker lease. Default 1 s. */
  deliverEveryMs?: number;
  /** Where the watchdog, its checker and its alert dispatcher tell what they do. */
  events?: EngineEvents;
  env?: NodeJS.ProcessEnv;
}

/**
 * The freshness and "did not run" checks, and alert delivery, in whichever idem process holds
 * the checker lease (schedulers, workers and `idem serve` all run one; one passes at a time).
 * It does not depend on the scheduler, so a dead scheduler is noticed and said.
 * The lease is renewed only at the start of each pass, so its heartbeat is the last pass's time.
 */
export class Watchdog {
  readonly #o: WatchdogOptions & { intervalMs: number; leaseMs: number; deliverEveryMs: number; events: EngineEvents };
  readonly #checker: FreshnessChecker;
  readonly #dispatcher: AlertDispatcher;
  #leaseUntil = -Infinity;
  #state: WatchdogStatus["state"] = { kind: "idle" };
  #lastPassAt: number | null = null;

  constructor(options: WatchdogOptions) {
    const intervalMs = options.intervalMs ?? DEFAULTS.checkerIntervalMs;
    const events = options.events ?? new EngineEvents();
    this.#o = { deliverEveryMs: 1_000, leaseMs: 3 * intervalMs, ...options, intervalMs, events };
    this.#checker = new FreshnessChecker({
      store: options.store, pipelines: options.pipelines, defaultNotify: options.defaultNotify ?? [], routes: options.routes ?? [], events,
      ...(options.graceMs === undefined ? {} : { didNotRunGraceMs: options.graceMs }),
      ...(options.schedulerStarting ? { schedulerStarting: options.schedulerStarting } : {}),
    });
    const { pipelines } = options;
    this.#dispatcher = new AlertDispatcher({
      store: options.store, clock: options.clock, notifiers: options.notifiers, events, defaultNotify: options.defaultNotify ?? ["log"],
      traits: (incident) => incidentTraits(incident, typeof pipelines === "function" ? pipelines() : pipelines),
      ...(options.env ? { env: options.env } : {}),
      ...(options.uiUrl === undefined ? {} : { uiUrl: options.uiUrl }),
      ...(options.digest === undefined ? {} : { digest: options.digest }),
      ...(options.failing === undefined ? {} : { failing: options.failing }),
    });
  }

  /** What this watchdog is doing now (`Engine.processStatus()`). */
  status(): WatchdogStatus {
    return { part: "watchdog", holder: this.#o.holder, state: this.#state, lastPassAt: this.#lastPassAt };
  }

  /** Takes (or keeps) the checker lease and, when this process holds it, checks everything once. */
  async pass(): Promise<{ leader: boolean; holder: string; result: CheckResult | null }> {
    const { store, clock, holder, leaseMs } = this.#o;
    const now = clock.now();
    const lead = await store.tryLead({ role: CHECKER_ROLE, holder, now, ttlMs: leaseMs });
    if (!lead.leader) {
      this.#leaseUntil = -Infinity;
      this.#state = { kind: "standing-by", checker: lead.holder };
      return { leader: false, holder: lead.holder, result: null };
    }
    this.#leaseUntil = lead.expiresAt;
    const result = await this.#checker.check(now);
    if (this.#state.kind !== "checking") this.#state = { kind: "checking", since: now };
    this.#lastPassAt = now;
    return { leader: true, holder, result };
  }

  /** Delivers due alerts if this process holds the checker lease; returns how many went out. */
  async deliver(): Promise<number> {
    return this.#o.clock.now() < this.#leaseUntil ? this.#dispatcher.deliverDue() : 0;
  }

  /** Passes every interval and delivers alerts in between, until `signal` aborts; then lets the lease go. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, intervalMs, deliverEveryMs, events, holder } = this.#o;
    let nextPassAt = -Infinity;
    let leading: boolean | null = null;
    try {
      while (!signal.aborted) {
        try {
          if (clock.now() >= nextPassAt) {
            nextPassAt = clock.now() + intervalMs;
            const pass = await this.pass();
            if (pass.leader !== leading) {
              if (pass.leader) events.emit("lease:won", { role: "checker", holder });
              else events.emit("lease:lost", { role: "checker", holder, leader: pass.holder });
            }
            leading = pass.leader;
          }
          await this.deliver();
        } catch (error) {
          // A store out of reach for a while must not end the watchdog: try again at the next beat.
          const message = (error as Error).message;
          if (this.#state.kind !== "failing") this.#state = { kind: "failing", since: clock.now(), error: message };
          events.emit("watchdog:failed", { holder, error: message });
        }
        await clock.sleep(Math.min(deliverEveryMs, Math.max(0, nextPassAt - clock.now())), signal);
      }
    } finally {
      this.#state = { kind: "stopped" };
      await this.#o.store.resignLead(CHECKER_ROLE, this.#o.holder).catch(() => {});
    }
  }
}
