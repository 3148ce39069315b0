import { DefinitionError } from "../core/model/errors.ts";
import { parseDuration } from "../core/time/duration.ts";
import { ident, sql } from "./sql.ts";
import type { Target } from "./target.ts";

export type Watermark = string | number;

/**
 * Where incremental loads keep their high-water mark, per pipeline and task. The state store
 * implements it; these two are for tests and for targets that keep their own.
 */
export interface WatermarkStore {
  get(pipelineId: string, taskId: string): Promise<Watermark | null>;
  save(pipelineId: string, taskId: string, value: Watermark): Promise<void>;
}

export function memoryWatermarkStore(): WatermarkStore & { values: Map<string, Watermark> } {
  const values = new Map<string, Watermark>();
  return {
    values,
    async get(pipelineId, taskId) {
      return values.get(`${pipelineId}\u0000${taskId}`) ?? null;
    },
    async save(pipelineId, taskId, value) {
      const k = `${pipelineId}\u0000${taskId}`;
      const current = values.get(k);
      if (current === undefined || compareWatermarks(value, current) > 0) values.set(k, value);
    },
  };
}

/** Watermarks in a `_idem_watermarks` table of a SQL target; a save never lowers one. */
export function tableWatermarkStore(target: Target): WatermarkStore {
  let ready = false;
  const ensure = async () => {
    if (ready) return;
    await target.exec(sql`CREATE TABLE IF NOT EXISTS ${ident("_idem_watermarks")} (pipeline_id VARCHAR(200) NOT NULL, task_id VARCHAR(200) NOT NULL,
      value VARCHAR(200) NOT NULL, kind VARCHAR(10) NOT NULL, PRIMARY KEY (pipeline_id, task_id))`);
    ready = true;
  };
  const read = async (pipelineId: string, taskId: string): Promise<Watermark | null> => {
    await ensure();
    const rows = await target.query(sql`SELECT value, kind FROM ${ident("_idem_watermarks")} WHERE pipeline_id = ${pipelineId} AND task_id = ${taskId}`);
    const row = rows[0];
    if (!row) return null;
    return row.kind === "number" ? Number(row.value) : String(row.value);
  };
  return {
    get: read,
    async save(pipelineId, taskId, value) {
      const current = await read(pipelineId, taskId);
      if (current !== null && compareWatermarks(value, current) <= 0) return;
      const kind = typeof value === "number" ? "number" : "text";
      await target.exec(sql`INSERT INTO ${ident("_idem_watermarks")} (pipeline_id, task_id, value, kind) VALUES (${pipelineId}, ${taskId}, ${String(value)}, ${kind})
        ON CONFLICT (pipeline_id, task_id) DO UPDATE SET value = excluded.value, kind = excluded.kind`);
    },
  };
}

const TIMESTAMP = /^(\d{4}-\d{2}-\d{2})(?:[ T](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?(Z|[+-]\d{2}:?\d{2})?$/;

function instant(value: string): number | null {
  const m = TIMESTAMP.exec(value.trim());
  if (!m) return null;
  const ms = Date.parse(`${m[1]}T${m[2] ?? "00:00:00"}${m[3] ?? "Z"}`);
  return Number.isNaN(ms) ? null : ms;
}

export function compareWatermarks(a: Watermark, b: Watermark): number {
  if (typeof a === "number" && typeof b === "number") return Math.sign(a - b);
  const x = typeof a === "string" ? instant(a) : null;
  const y = typeof b === "string" ? instant(b) : null;
  if (x !== null && y !== null) return Math.sign(x - y);
  const sa = String(a);
  const sb = String(b);
  return sa < sb ? -1 : sa > sb ? 1 : 0;
}

/**
 * The watermark moved back by the lookback window, so rows that arrived late (with an older
 * value than the newest seen) are read again; the merge makes reading them twice harmless.
 * Numbers take a number; timestamps and dates take a duration ("2h", "3d").
 */
export function subtractLookback(value: Watermark, lookback: number | string | undefined): Watermark {
  if (lookback === undefined || lookback === 0) return value;
  if (typeof value === "number") {
    if (typeof lookback !== "number") throw new DefinitionError(`a numeric watermark takes a numeric lookback, not ${JSON.stringify(lookback)}`);
    return value - lookback;
  }
  const ms = instant(value);
  if (ms === null) throw new DefinitionError(`watermark ${JSON.stringify(value)} is not a date or timestamp, so a lookback cannot be applied`);
  return formatLike(ms - lookbackMs(lookback), value);
}

function lookbackMs(lookback: number | string | undefined): number {
  if (lookback === undefined || lookback === 0) return 0;
  if (typeof lookback === "number") throw new DefinitionError(`a time window takes a duration lookback ("2h", "3d"), not the number ${lookback}`);
  return parseDuration(lookback, "lookback");
}

/** An instant written in the shape of `sample` (date only, space or T, zone or not), so it compares and binds like the column. */
function formatLike(ms: number, sample: string): string {
  const iso = new Date(ms).toISOString();
  if (/^\d{4}-\d{2}-\d{2}$/.test(sample.trim())) return iso.slice(0, 10);
  const m = TIMESTAMP.exec(sample.trim());
  const sep = sample.includes("T") ? "T" : " ";
  const time = iso.slice(11, 23).replace(/\.000$/, "");
  return `${iso.slice(0, 10)}${sep}${time}${m?.[3] ? "Z" : ""}`;
}

/** Rows an incremental read selects: `since < value` (all when null) and `value < until` (no bound when null). */
export interface WatermarkRange {
  since: Watermark | null;
  until: Watermark | null;
}

/**
 * The window of an interval `[start, end)` for a time watermark column: from the start minus the
 * lookback up to the end. `since` is exclusive, so it is the instant (or, for a date column, the
 * day) just before the window's start. Written in the shape of `sample`, the saved watermark, when
 * there is one; otherwise as UTC ISO date-times (`2026-08-31T23:59:59.999Z`).
 */
export function intervalWindow(interval: { start: string; end: string }, lookback: number | string | undefined, sample: Watermark | null): WatermarkRange {
  const start = instant(interval.start);
  const end = instant(interval.end);
  if (start === null || end === null) throw new DefinitionError(`interval ${interval.start}..${interval.end} is not a pair of ISO date-times`);
  const back = lookbackMs(lookback);
  if (typeof sample === "string" && /^\d{4}-\d{2}-\d{2}$/.test(sample.trim())) {
    // A date column: whole local days of the schedule's zone, the business date's own.
    const day = 86_400_000;
    const startDay = Date.parse(`${interval.start.slice(0, 10)}T00:00:00Z`);
    const lookbackDays = Math.ceil(back / day);
    return { since: new Date(startDay - (lookbackDays + 1) * day).toISOString().slice(0, 10), until: interval.end.slice(0, 10) };
  }
  const shape = typeof sample === "string" ? sample : "2026-01-01T00:00:00.000Z";
  return { since: formatLike(start - back - 1, shape), until: formatLike(end, shape) };
}
