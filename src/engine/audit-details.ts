import type { AuditEntry } from "../store/port.ts";
import type { DateRangeWhy } from "./backfill/plan.ts";
import { FROZEN_CHANGE_ACTION } from "./records/frozen-records.ts";

/**
 * An audit entry's details in one line for people: a backfill's range, what it runs, what it
 * refused and why, the frozen dates it opened; other actions' fields as name=value.
 */
export function describeAuditDetails(entry: AuditEntry): string {
  const d = entry.details;
  if (entry.action === FROZEN_CHANGE_ACTION) return ""; // the reason already says what changed
  if (entry.action === "backfill" && typeof d.from === "string") {
    const parts = [`${d.from}..${d.to}: ${d.planned ?? "?"} to run${typeof d.left === "number" ? `, ${d.left} left` : ""}`];
    const refused = ranges(d.refused);
    if (refused) parts.push(`refused ${refused}`);
    const opened = ranges(d.frozenOpened);
    if (opened) parts.push(`frozen opened (${d.openFrozen}): ${opened}`);
    return parts.join("; ");
  }
  return Object.entries(d)
    .filter(([, v]) => v !== null && v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0))
    .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
    .join(" ");
}

function ranges(value: unknown): string {
  if (!Array.isArray(value)) return "";
  return (value as DateRangeWhy[]).map((r) => `${r.from === r.to ? r.from : `${r.from}..${r.to}`} (${r.why})`).join(", ");
}
