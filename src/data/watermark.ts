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
  const back = new Date(ms - parseDuration(lookback, "lookback"));
  const iso = back.toISOString();
  if (/^\d{4}-\d{2}-\d{2}$/.test(value.trim())) return iso.slice(0, 10);
  // Keep the input's shape (space or T, zone or not) so it compares and binds like the column.
  const m = TIMESTAMP.exec(value.trim())!;
  const sep = value.includes("T") ? "T" : " ";
  const time = iso.slice(11, 23).replace(/\.000$/, "");
  return `${iso.slice(0, 10)}${sep}${time}${m[3] ? "Z" : ""}`;
}
