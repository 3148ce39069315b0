import { ArgumentError, NotFoundError } from "../core/model/errors.ts";
import type { RunState, TriggerKind } from "../core/model/states.ts";
import type { Pipeline } from "../core/pipeline/types.ts";
import { addDays, parseBusinessDate, parseInstant, startOfDay } from "../core/time/dates.ts";
import type { AlertRecord, AlertState, AuditEntry, DatasetEvent, Incident, RunRecord, Store } from "../store/port.ts";

export interface Page<T, K> {
  items: T[];
  /** The key to ask for the next page with; null on the last page. */
  next: K | null;
}

/** `rows` were asked for with limit + 1: one more than fits says there is a next page. */
function pageOf<T, K>(rows: T[], limit: number, keyOf: (row: T) => K): Page<T, K> {
  const items = rows.slice(0, limit);
  return { items, next: rows.length > limit ? keyOf(items.at(-1)!) : null };
}

/** Keyset pages over the store's indexes (never a count over history), for the HTTP surface and the UI. */
export class Pages {
  readonly #store: Store;
  /** The loaded pipeline of that id, or a NotFoundError. */
  readonly #pipeline: (id: string) => Pipeline;

  constructor(store: Store, pipeline: (id: string) => Pipeline) {
    this.#store = store;
    this.#pipeline = pipeline;
  }

  /**
   * One page of a pipeline's runs, newest business date first. `after` is the interval start of
   * the last run of the previous page; `next` is the same for this page, null on the last one.
   */
  async runs(
    pipelineId: string,
    query: { states?: readonly RunState[]; triggers?: readonly TriggerKind[]; codeVersion?: string; fromDate?: string; toDate?: string; limit: number; after?: number },
  ): Promise<Page<RunRecord, number>> {
    const tz = this.#pipeline(pipelineId).schedule.timezone;
    const day = (date: string, argument: "from" | "to") => {
      try {
        return parseBusinessDate(date);
      } catch (error) {
        throw new ArgumentError(argument, (n) => `${n(argument)}: ${(error as Error).message}`, { pipeline: pipelineId });
      }
    };
    if (query.codeVersion !== undefined && !(await this.#store.getCodeVersion(pipelineId, query.codeVersion))) {
      throw new NotFoundError("codeVersion", `pipeline ${pipelineId} has no code version ${query.codeVersion} (idem versions ${pipelineId} lists them)`);
    }
    const rows = await this.#store.pageRuns({
      pipelineId,
      states: query.states,
      triggers: query.triggers,
      codeVersion: query.codeVersion,
      fromStart: query.fromDate === undefined ? undefined : startOfDay(day(query.fromDate, "from"), tz),
      toStart: query.toDate === undefined ? undefined : startOfDay(addDays(day(query.toDate, "to"), 1), tz),
      beforeStart: query.after,
      limit: query.limit + 1,
    });
    return pageOf(rows, query.limit, (r) => r.intervalStart);
  }

  /** One page of the audit log, newest first; `from` and `to` are instants or dates (a date is midnight UTC). */
  async audit(query: { pipelineId?: string; actor?: string; action?: string; from?: string; to?: string; limit: number; after?: number }): Promise<Page<AuditEntry, number>> {
    if (query.pipelineId) this.#pipeline(query.pipelineId);
    const instant = (value: string | undefined, argument: "from" | "to") => {
      if (value === undefined) return undefined;
      try {
        return parseInstant(value, "UTC");
      } catch (error) {
        throw new ArgumentError(argument, (n) => `${n(argument)}: ${(error as Error).message}`);
      }
    };
    const rows = await this.#store.pageAudit({
      pipelineId: query.pipelineId, actor: query.actor, action: query.action,
      fromAt: instant(query.from, "from"), toAt: instant(query.to, "to"), beforeId: query.after, limit: query.limit + 1,
    });
    return pageOf(rows, query.limit, (e) => e.id);
  }

  async incidents(query: { open?: boolean; limit: number; after?: { openedAt: number; key: string } }): Promise<Page<Incident, { openedAt: number; key: string }>> {
    const rows = await this.#store.pageIncidents({ open: query.open, before: query.after, limit: query.limit + 1 });
    return pageOf(rows, query.limit, (i) => ({ openedAt: i.openedAt, key: i.key }));
  }

  /** A page of alerts queued for incidents, newest first: notifier, open or resolve, queued / failed / sent, tries, last error. */
  async alerts(query: { pipelineId?: string; incidentKey?: string; state?: AlertState; limit: number; after?: number }): Promise<Page<AlertRecord, number>> {
    if (query.pipelineId) this.#pipeline(query.pipelineId);
    const rows = await this.#store.pageAlerts({ pipelineId: query.pipelineId, incidentKey: query.incidentKey, state: query.state, beforeId: query.after, limit: query.limit + 1 });
    return pageOf(rows, query.limit, (a) => a.id);
  }

  async datasetEvents(query: { dataset?: string; limit: number; after?: number }): Promise<Page<DatasetEvent, number>> {
    const rows = await this.#store.pageDatasetEvents({ dataset: query.dataset, beforeId: query.after, limit: query.limit + 1 });
    return pageOf(rows, query.limit, (e) => e.id);
  }
}
