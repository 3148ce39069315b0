import type { AttemptRecord } from "../../store/port.ts";
import { html, type Html } from "./html.ts";
import { at, duration, links } from "./parts.ts";

/**
 * Attempts on a time axis, one lane per task: retries show as several bars, a running attempt
 * reaches to now. Bars are SVG rects (position as attributes, which the page's CSP allows).
 */
export function gantt(taskIds: readonly string[], attempts: readonly AttemptRecord[], now: number): Html {
  if (attempts.length === 0) return html`<div class="empty">No attempt has started yet.</div>`;
  const start = Math.min(...attempts.map((a) => a.startedAt));
  const end = Math.max(...attempts.map((a) => a.endedAt ?? now), start + 1000);
  const span = end - start;
  const x = (ms: number) => ((ms - start) / span) * 1000;
  const lanes = taskIds.map((taskId) => {
    const mine = attempts.filter((a) => a.taskId === taskId);
    const bars = mine.map((a) => {
      const left = x(a.startedAt);
      const width = Math.max(x(a.endedAt ?? now) - left, 2);
      return html`<a href="${links.task(a.runId, a.taskId, a.tryNumber)}"><rect class="bar s-${a.state}" x="${left.toFixed(1)}" y="3" width="${width.toFixed(1)}" height="14" rx="3"><title>${a.taskId} try ${a.tryNumber}: ${a.state}, ${duration((a.endedAt ?? now) - a.startedAt)}</title></rect></a>`;
    });
    return html`<a class="mono" href="${links.task(mine[0]?.runId ?? attempts[0]!.runId, taskId)}">${taskId}</a><svg class="lane" viewBox="0 0 1000 20" preserveAspectRatio="none" role="group" aria-label="${taskId}: ${mine.length} attempt(s)">${bars}</svg>`;
  });
  return html`<div class="gantt">${lanes}<span></span><div class="axis"><span>${at(start, true)}</span><span>${duration(span)}</span><span>${at(end, true)}</span></div></div>`;
}
