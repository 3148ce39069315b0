import type { TaskState } from "../../core/model/states.ts";
import type { MappedStateCounts } from "../../store/port.ts";
import { html, query, seg, type Html } from "./html.ts";
import { stateLabel } from "./parts.ts";

/**
 * The order a mapped task's counts are told in, and which state colours its one cell: the first
 * that any instance is in. A failure first (someone must act), then what is still moving, then
 * how the ended ones ended.
 */
export const MAPPED_STATE_ORDER: readonly TaskState[] = [
  "failed", "upstream_failed", "up_for_retry", "running", "up_for_reschedule", "queued", "scheduled", "success", "skipped", "removed",
];

/** The state a mapped task's cell shows: the most pressing one any of its instances is in (its own, when it has none). */
export function mappedCellState(counts: MappedStateCounts, own: TaskState): TaskState {
  return MAPPED_STATE_ORDER.find((state) => counts[state] > 0) ?? own;
}

/** How many instances are counted: every state, removed ones included. */
export function mappedTotal(counts: MappedStateCounts): number {
  return MAPPED_STATE_ORDER.reduce((sum, state) => sum + counts[state], 0);
}

/** "100,000 mapped instances: 99,970 success, 10 failed, 20 running": a cell's title and label. */
export function mappedSummary(counts: MappedStateCounts): string {
  const total = mappedTotal(counts);
  const parts = MAPPED_STATE_ORDER.filter((state) => counts[state] > 0).map((state) => `${counts[state].toLocaleString("en")} ${stateLabel(state)}`);
  return `${total.toLocaleString("en")} mapped instance${total === 1 ? "" : "s"}${parts.length ? `: ${parts.join(", ")}` : ""}`;
}

/** The drill-down of one mapped task of one run, with its filters. */
export function instancesLink(runId: string, taskId: string, q: Record<string, string | number | null | undefined> = {}): string {
  return `/ui/runs/${seg(runId)}/tasks/${seg(taskId)}/instances${query(q)}`;
}

/**
 * The counts as badges with their numbers, each a link to the instances in that state when
 * `link` is given (the filter the drill-down keeps in its URL).
 */
export function mappedCounts(counts: MappedStateCounts, link?: (state: TaskState) => string, selected?: string | null): Html {
  const shown = MAPPED_STATE_ORDER.filter((state) => counts[state] > 0);
  return html`<span class="counts mapcounts">${shown.map((state) => {
    const label = html`${stateLabel(state)} <b>${counts[state].toLocaleString("en")}</b>`;
    return link
      ? html`<a class="b s-${state}${selected === state ? " on" : ""}" href="${link(state)}"${selected === state ? html` aria-current="true"` : ""}>${label}</a>`
      : html`<span class="b s-${state}">${label}</span>`;
  })}</span>`;
}
