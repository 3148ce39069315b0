import type { EngineEvents } from "../events/engine-events.ts";
import type { Clock } from "../../core/model/clock.ts";
import type { IncidentKind } from "../../core/model/incidents.ts";
import { DEFAULT_SEVERITY } from "../../core/policy/alert-routing.ts";
import { afterDelivery, digestDecision, notifierFailing, type DigestPolicy, type FailingPolicy, type NotifierRecord } from "../../core/policy/alert-delivery.ts";
import type { FreshnessStore, OutboxAlert } from "../../store/port.ts";
import type { NotifierConfig } from "../project/config.ts";
import { DEFAULTS } from "../project/defaults.ts";
import type { IncidentTraits } from "./incident-traits.ts";
import { resolveNotifier, type ResolvedNotifier } from "./notifiers/index.ts";
import { linkOf } from "./notifiers/message.ts";
import type { AlertView, NotifierContext } from "./notifiers/notifier.ts";

export interface DispatcherOptions {
  store: FreshnessStore;
  clock: Clock;
  notifiers: Readonly<Record<string, NotifierConfig>>;
  /** Where failed deliveries (and the `log` notifier's alerts) are told. */
  events: EngineEvents;
  /** First retry delay; doubles per failure up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  env?: NodeJS.ProcessEnv;
  /** An incident's severity and owner (from its promise and pipeline); default: its kind's severity, no owner. */
  traits?: (incident: { kind: IncidentKind; pipelineId: string | null; dataset: string | null }) => IncidentTraits;
  /** The UI's address, for links in alerts; null: no links. */
  uiUrl?: string | null;
  /** Bursts: at most `after` messages per notifier per window, the rest in one digest; null: never. */
  digest?: DigestPolicy | null;
  /** When a notifier that keeps failing becomes an incident. */
  failing?: FailingPolicy;
  /** Who hears that a notifier is failing (never that notifier itself; the log when none is left). */
  defaultNotify?: readonly string[];
}

type Resolved = Required<Omit<DispatcherOptions, "traits">> & Pick<DispatcherOptions, "traits">;

/**
 * Delivers queued alerts outside every retrying task and outside the scheduler's tick: a
 * notifier that is down is retried with backoff and never blocks scheduling. It paces each
 * notifier (a burst becomes one digest) and watches it (one that keeps failing is an incident,
 * told to the others). What it remembers of the recent past (messages sent, failures in a row)
 * is this process's: a watchdog that takes over starts afresh, and the incidents it finds open
 * are resolved by the next success.
 */
export class AlertDispatcher {
  readonly #o: Resolved;
  /** Per notifier: when it was sent messages, within the digest window. */
  readonly #sentAt = new Map<string, number[]>();
  /** Per notifier: nothing is sent to it before this (its window's budget is spent). */
  readonly #waitUntil = new Map<string, number>();
  readonly #records = new Map<string, NotifierRecord>();
  /** Notifiers that may have a "notifier failing" incident open: looked for at their next success. */
  readonly #mayBeFailing = new Set<string>();
  readonly #resolved = new Map<string, ResolvedNotifier>();

  constructor(options: DispatcherOptions) {
    this.#o = {
      retryMs: 30_000, maxRetryMs: 3_600_000, env: process.env, uiUrl: null, digest: DEFAULTS.alertDigest, failing: DEFAULTS.notifierFailing,
      defaultNotify: ["log"], ...options,
    };
    // Incidents opened by an earlier holder of the checker lease are looked for at the first success.
    for (const name of Object.keys(options.notifiers)) this.#mayBeFailing.add(name);
  }

  /** Sends every alert that is due; returns how many were delivered. */
  async deliverDue(limit = 500): Promise<number> {
    const { store, clock } = this.#o;
    const now = clock.now();
    const byNotifier = new Map<string, OutboxAlert[]>();
    for (const alert of await store.dueAlerts(now, limit)) {
      const list = byNotifier.get(alert.notifier);
      if (list) list.push(alert);
      else byNotifier.set(alert.notifier, [alert]);
    }
    let delivered = 0;
    for (const [name, alerts] of byNotifier) {
      if ((this.#waitUntil.get(name) ?? -Infinity) > now) continue;
      delivered += await this.#deliverTo(name, alerts);
    }
    return delivered;
  }

  /** Delivers until `signal` aborts, looking every `everyMs`. */
  async run(signal: AbortSignal, everyMs = 1_000): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.deliverDue();
      } catch (error) {
        this.#o.events.emit("alert:delivery-failed", { error: (error as Error).message });
      }
      await this.#o.clock.sleep(everyMs, signal);
    }
  }

  /**
   * Sends a test message through one notifier, as an alert would go (`idem alerts test`).
   * Throws one line naming the notifier, its kind and the cause.
   */
  async sendTest(name: string): Promise<{ kind: string }> {
    const notifier = this.#notifier(name);
    const now = this.#o.clock.now();
    const view: AlertView = {
      event: "test", key: `test:${name}:${now}`, kind: "test", severity: "info", owner: null, pipelineId: null, dataset: null,
      businessDate: null, runId: null, message: `a test message from idem to the notifier ${name}`, resolution: null, openedAt: now, resolvedAt: null,
      link: linkOf(this.#o.uiUrl, { kind: "test", runId: null, pipelineId: null, dataset: null }), notifier: name,
    };
    try {
      await notifier.definition.send(notifier.settings, view, this.#context(name));
    } catch (error) {
      throw new Error(`${notifier.kind} ${name}: ${(error as Error).message}`);
    }
    return { kind: notifier.kind };
  }

  async #deliverTo(name: string, alerts: OutboxAlert[]): Promise<number> {
    const { clock } = this.#o;
    let notifier: ResolvedNotifier;
    try {
      notifier = this.#notifier(name);
    } catch (error) {
      for (const alert of alerts) await this.#failed(name, [alert], (error as Error).message);
      return 0;
    }
    const now = clock.now();
    const sentAt = (this.#sentAt.get(name) ?? []).filter((at) => this.#o.digest === null || at > now - this.#o.digest.windowMs);
    this.#sentAt.set(name, sentAt);
    const decision = digestDecision(alerts.length, sentAt, now, this.#o.digest, notifier.definition.sendDigest !== null);
    if (decision.send === "wait") {
      this.#waitUntil.set(name, decision.until);
      return 0;
    }
    if (decision.send === "digest") {
      return this.#attempt(name, notifier, alerts, () => notifier.definition.sendDigest!(notifier.settings, alerts.map((a) => this.#view(a)), this.#context(name)));
    }
    let delivered = 0;
    for (const alert of alerts) delivered += await this.#attempt(name, notifier, [alert], () => notifier.definition.send(notifier.settings, this.#view(alert), this.#context(name)));
    return delivered;
  }

  /** One message for `alerts` (one alert, or a digest of many): recorded for each of them. */
  async #attempt(name: string, notifier: ResolvedNotifier, alerts: OutboxAlert[], send: () => Promise<void>): Promise<number> {
    const { store, clock } = this.#o;
    try {
      await send();
    } catch (error) {
      await this.#failed(name, alerts, `${notifier.kind} ${name}: ${(error as Error).message}`);
      return 0;
    }
    const at = clock.now();
    this.#sentAt.get(name)?.push(at);
    for (const alert of alerts) await store.recordAlertDelivery(alert.id, { at });
    await this.#succeeded(name, at);
    return alerts.length;
  }

  async #failed(name: string, alerts: OutboxAlert[], message: string): Promise<void> {
    const { store, clock } = this.#o;
    const now = clock.now();
    for (const alert of alerts) {
      const wait = Math.min(this.#o.maxRetryMs, this.#o.retryMs * 2 ** alert.tries);
      await store.recordAlertDelivery(alert.id, { at: now, error: message, nextAttemptAt: now + wait });
      this.#o.events.emit("alert:retrying", { event: alert.event, incidentKey: alert.incidentKey, notifier: name, error: message, retryInMs: wait });
    }
    const record = afterDelivery(this.#records.get(name) ?? { failuresInARow: 0, failingSince: null }, false, now);
    this.#records.set(name, record);
    if (!notifierFailing(record, this.#o.failing, now)) return;
    const others = this.#o.defaultNotify.filter((n) => n !== name);
    const opened = await store.openIncident({
      key: `notifier_failing:${name}:${record.failingSince}`, kind: "notifier_failing", dataset: null, pipelineId: null, businessDate: null, runId: null,
      message: `notifier ${name} is failing: ${record.failuresInARow} deliveries in a row failed since ${new Date(record.failingSince!).toISOString()}; the last: ${message}`,
      notify: others.length ? others : name === "log" ? [] : ["log"], at: now,
    });
    this.#mayBeFailing.add(name);
    if (opened) this.#o.events.emit("notifier:failing", { notifier: name, failures: record.failuresInARow });
  }

  async #succeeded(name: string, at: number): Promise<void> {
    this.#records.set(name, afterDelivery(this.#records.get(name) ?? { failuresInARow: 0, failingSince: null }, true, at));
    if (!this.#mayBeFailing.delete(name)) return;
    const { store } = this.#o;
    for (const open of await store.listIncidents({ open: true, limit: 1000 })) {
      if (open.kind === "notifier_failing" && open.key.startsWith(`notifier_failing:${name}:`)) {
        await store.resolveIncident(open.key, at, `notifier ${name} delivered again`);
      }
    }
  }

  #notifier(name: string): ResolvedNotifier {
    let notifier = this.#resolved.get(name);
    if (!notifier) {
      const config = this.#o.notifiers[name];
      if (!config) throw new Error(`no notifier named "${name}" in idem.config.ts`);
      notifier = resolveNotifier(config);
      this.#resolved.set(name, notifier);
    }
    return notifier;
  }

  #context(name: string): NotifierContext {
    return { name, env: this.#o.env, events: this.#o.events, now: this.#o.clock.now() };
  }

  /** The queued payload (the incident as the store recorded it) with its severity, owner and link. */
  #view(alert: OutboxAlert): AlertView {
    const payload = alert.payload as Omit<AlertView, "severity" | "owner" | "link" | "notifier">;
    const incident = { kind: payload.kind as IncidentKind, pipelineId: payload.pipelineId ?? null, dataset: payload.dataset ?? null };
    const traits = this.#o.traits?.(incident) ?? { severity: DEFAULT_SEVERITY[incident.kind] ?? "error", owner: null };
    return {
      ...payload,
      event: alert.event,
      key: alert.incidentKey,
      severity: traits.severity,
      owner: traits.owner,
      link: linkOf(this.#o.uiUrl, { kind: incident.kind, runId: payload.runId ?? null, pipelineId: incident.pipelineId, dataset: incident.dataset }),
      notifier: alert.notifier,
    };
  }
}
