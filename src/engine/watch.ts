import { DefinitionError, UsageError } from "../core/model/errors.ts";
import type { AlertRoute } from "../core/policy/alert-routing.ts";
import type { DigestPolicy, FailingPolicy } from "../core/policy/alert-delivery.ts";
import type { EngineContext } from "./engine-context.ts";
import { AlertDispatcher } from "./freshness/alert-dispatcher.ts";
import { missingNotifierVariable } from "./freshness/notifiers/index.ts";
import { freshnessReport, type FreshnessReport } from "./freshness/report.ts";
import { Watchdog } from "./freshness/watchdog.ts";
import type { NotifierConfig } from "./project/config.ts";
import { DEFAULTS } from "./project/defaults.ts";
import type { SchedulerStart } from "./scheduler/scheduler-start.ts";
import type { SecretMasker } from "./secrets/masker.ts";
import type { EngineEvents } from "./events/engine-events.ts";

export interface WatchSettings {
  notifiers?: Readonly<Record<string, NotifierConfig>>;
  /** Who hears of incidents neither a promise nor a route names notifiers for. */
  defaultNotify?: readonly string[];
  /** Rules choosing notifiers by pipeline, dataset, owner, severity and kind. */
  routes?: readonly AlertRoute[];
  /** Bursts to one notifier become one digest; null: never. Default 5 messages per 60 s. */
  digest?: DigestPolicy | null;
  /** When a notifier that keeps failing is an incident. Default 3 failures in a row or 10 minutes. */
  failing?: FailingPolicy;
  /** The UI's address, for links in alerts. */
  uiUrl?: string | null;
  /** The config file, named when a notifier's variable is missing. */
  configFile?: string | null;
  /** How often the checker passes. Default 15 s. */
  intervalMs?: number;
  /** The "did not run" and "scheduler down" grace. Default 10 minutes. */
  graceMs?: number;
  /** The checker counts as dead when its last pass is older than this. Default 60 s. */
  staleMs?: number;
}

/** What the watch takes of this process: who it is, what it masks, where it tells, whether its scheduler is starting. */
export interface WatchProcess {
  workerId: string;
  masker: SecretMasker;
  events: EngineEvents;
  schedulerStart: SchedulerStart;
}

/** The watch over freshness promises: the watchdog each long-lived process runs, its notifiers, the freshness report. */
export class Watch {
  readonly #e: Pick<EngineContext, "store" | "clock" | "catalog">;
  readonly #settings: WatchSettings;
  readonly #process: WatchProcess;

  constructor(context: Pick<EngineContext, "store" | "clock" | "catalog">, settings: WatchSettings, process: WatchProcess) {
    this.#e = context;
    this.#settings = settings;
    this.#process = process;
  }

  /** The checker counts as dead when its last pass is older than this. */
  get staleMs(): number {
    return this.#settings.staleMs ?? DEFAULTS.checkerStaleMs;
  }

  /** The "did not run" and "scheduler down" grace. */
  get graceMs(): number {
    return this.#settings.graceMs ?? DEFAULTS.didNotRunGraceMs;
  }

  /** Per promised dataset: newest published date, its status against the deadline, the last days; and whether the checker lives. */
  async freshness(days: number): Promise<FreshnessReport> {
    return freshnessReport(this.#e.store, this.#e.catalog.pipelines(), this.#e.clock.now(), this.staleMs, days);
  }

  /**
   * The watchdog for this process: every idem process that stays up (scheduler, worker, `idem
   * serve`) runs one, and the checker lease lets one pass at a time. `role` names the process
   * for `idem health` ("worker", "serve").
   */
  watchdog(role: string): Watchdog {
    const notifiers = this.#notifiers();
    const missing = missingNotifierVariable(notifiers, process.env);
    if (missing) throw new DefinitionError(missing, { file: this.#settings.configFile ?? "idem.config.ts" });
    const watch = this.#settings;
    const { events, schedulerStart, workerId } = this.#process;
    return new Watchdog({
      store: this.#e.store,
      clock: this.#e.clock,
      pipelines: () => this.#e.catalog.pipelines(),
      holder: `${role} ${workerId}`,
      notifiers,
      defaultNotify: watch.defaultNotify ?? ["log"],
      routes: watch.routes ?? [],
      schedulerStarting: () => schedulerStart.pending,
      ...(watch.digest === undefined ? {} : { digest: watch.digest }),
      ...(watch.failing === undefined ? {} : { failing: watch.failing }),
      ...(watch.uiUrl === undefined ? {} : { uiUrl: watch.uiUrl }),
      ...(watch.intervalMs === undefined ? {} : { intervalMs: watch.intervalMs }),
      ...(watch.graceMs === undefined ? {} : { graceMs: watch.graceMs }),
      events,
    });
  }

  /**
   * Sends a test message through the notifier `name`, as an alert goes (`idem alerts test`):
   * its kind when it went out; an error naming the notifier and the cause when it did not.
   */
  async testNotifier(name: string): Promise<{ notifier: string; kind: string }> {
    const notifiers = this.#notifiers();
    const { masker, events } = this.#process;
    if (!notifiers[name]) throw new UsageError(`no notifier named ${JSON.stringify(name)} (known: ${Object.keys(notifiers).join(", ")})`);
    const missing = missingNotifierVariable({ [name]: notifiers[name] }, process.env);
    if (missing) throw new DefinitionError(missing, { file: this.#settings.configFile ?? "idem.config.ts" });
    const dispatcher = new AlertDispatcher({
      store: this.#e.store, clock: this.#e.clock, notifiers, events, uiUrl: this.#settings.uiUrl ?? null,
    });
    try {
      const { kind } = await dispatcher.sendTest(name);
      return { notifier: name, kind };
    } catch (error) {
      throw new Error(masker.mask(`notifier ${name} failed: ${(error as Error).message}`));
    }
  }

  #notifiers(): Record<string, NotifierConfig> {
    return { log: { log: true }, ...this.#settings.notifiers };
  }
}
