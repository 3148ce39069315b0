import type { Clock } from "../core/model/clock.ts";
import { ArgumentError, NotFoundError } from "../core/model/errors.ts";
import { incidentState } from "../core/policy/incident-lifecycle.ts";
import type { IncidentView } from "./freshness/report.ts";
import type { FreshnessStore, Incident } from "../store/port.ts";
import { defaultActor, tellAudit, type Acting } from "./acting.ts";
import { refusalsTranslated } from "./records/store-refusals.ts";
import type { Page } from "./pages.ts";

export interface IncidentAcknowledgeRequest {
  reason: string;
  /** A snooze until this instant. */
  until?: number | null;
  /** A snooze for this many milliseconds from now. */
  for?: number;
}

export type { IncidentView };

/**
 * A person's actions on incidents: acknowledge (with an end: snooze) and resolve, each with a
 * reason, decided by core's lifecycle in the store's transaction and audited there. A person's
 * resolution queues the "resolve" alert for the notifiers that were told of the opening.
 */
export class IncidentActions {
  readonly #store: FreshnessStore;
  readonly #clock: Clock;

  constructor(store: FreshnessStore, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  view(incident: Incident): IncidentView {
    return { ...incident, state: incidentState(incident, this.#clock.now()) };
  }

  /** Incidents, newest first, each with its state now (open, acknowledged, resolved). */
  async list(query: { open?: boolean; limit?: number }): Promise<IncidentView[]> {
    return (await this.#store.listIncidents(query)).map((i) => this.view(i));
  }

  /** A page of incidents, each with its state now. */
  viewPage<Cursor>(page: Page<Incident, Cursor>): Page<IncidentView, Cursor> {
    return { ...page, items: page.items.map((i) => this.view(i)) };
  }

  async get(key: string): Promise<IncidentView> {
    const incident = await this.#store.getIncident(key);
    if (!incident) throw new NotFoundError("incident", `unknown incident ${key}`);
    return this.view(incident);
  }

  /**
   * Acknowledges an incident: someone is on it. With `until` (an instant) or `for` (from now),
   * a snooze: open again then, unless resolved.
   */
  async acknowledge(key: string, request: IncidentAcknowledgeRequest & Acting): Promise<IncidentView> {
    const at = this.#clock.now();
    const length = request.for;
    if (request.until != null && length !== undefined) throw new ArgumentError("until", (n) => `give ${n("until")} or ${n("for")}, not both`);
    if (length !== undefined && !(length > 0)) throw new ArgumentError("for", (n) => `${n("for")} must be a positive duration to snooze incident ${key}`);
    const until = length !== undefined ? at + length : (request.until ?? null);
    if (until !== null && until <= at) throw new ArgumentError("until", (n) => `${n("until")} must be in the future to snooze incident ${key}`);
    return this.#act({ key, kind: "acknowledge", until, at }, request);
  }

  /** Resolves an incident by hand, with the reason; idem resolves it by itself when its cause ends. */
  async resolve(key: string, request: { reason: string } & Acting): Promise<IncidentView> {
    return this.#act({ key, kind: "resolve", at: this.#clock.now() }, request);
  }

  async #act(
    action: { key: string; at: number } & ({ kind: "acknowledge"; until: number | null } | { kind: "resolve" }),
    request: { reason: string } & Acting,
  ): Promise<IncidentView> {
    if (!request.reason?.trim()) throw new ArgumentError("reason", (n) => `a ${n("reason")} is required to ${action.kind} incident ${action.key}: every change to an incident is audited`);
    await this.get(action.key);
    const { incident, audit } = await refusalsTranslated(() =>
      this.#store.actOnIncident({ ...action, actor: request.actor ?? defaultActor(), reason: request.reason }),
    );
    tellAudit(request, audit);
    return this.view(incident);
  }
}
