import { appendFile, readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { WriteContext } from "../context.ts";
import { fsyncPath } from "./atomic-file.ts";
import { workspaceOf } from "./workspace.ts";

/**
 * The write history of a file dataset: one JSON line per publish in `<workspace>/history.jsonl`
 * (`lake/.orders.idem/history.jsonl` for `lake/orders`), appended after the pointer moved.
 */
export interface FileHistoryEntry {
  /** 1 for the first line of the file. */
  id: number;
  partition: string;
  path: string;
  rows: number;
  version: string;
  previousVersion: string | null;
  runId: string | null;
  pipelineId: string | null;
  taskId: string | null;
  tryNumber: number | null;
  batchId: string | null;
  businessDate: string | null;
  frozenOverride: string | null;
  writtenAt: string;
}

export function fileHistoryPath(root: string): string {
  return join(workspaceOf(root), "history.jsonl");
}

export function hasFileHistory(root: string): boolean {
  return existsSync(fileHistoryPath(root));
}

export async function appendFileHistory(
  root: string,
  entry: { partition: string; path: string; version: string; rows: number; previousVersion: string | null; context: WriteContext; frozenOverride: string | null; at: string },
): Promise<void> {
  const file = fileHistoryPath(root);
  const { context, ...rest } = entry;
  const line = JSON.stringify({
    ...rest, runId: context.runId, pipelineId: context.pipelineId, taskId: context.taskId, tryNumber: context.tryNumber,
    batchId: context.batchId ?? null, businessDate: context.businessDate ?? null,
  }) + "\n";
  await appendFile(file, line);
  await fsyncPath(file);
}

/**
 * The dataset's publishes, newest first. A line cut short by a writer killed mid-append is
 * skipped: the publish it describes had already happened, and the next line stands on its own.
 */
export async function readFileHistory(root: string, options: { limit?: number } = {}): Promise<FileHistoryEntry[]> {
  if (!hasFileHistory(root)) return [];
  const limit = Math.max(1, Math.floor(options.limit ?? 20));
  const lines = (await readFile(fileHistoryPath(root), "utf8")).split("\n");
  const entries: FileHistoryEntry[] = [];
  for (let i = lines.length - 1; i >= 0 && entries.length < limit; i--) {
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(lines[i]!) as Record<string, unknown>;
    } catch {
      continue;
    }
    const text = (v: unknown) => (typeof v === "string" ? v : null);
    entries.push({
      id: i + 1,
      partition: String(raw.partition),
      path: String(raw.path),
      rows: Number(raw.rows),
      version: String(raw.version),
      previousVersion: text(raw.previousVersion),
      runId: text(raw.runId),
      pipelineId: text(raw.pipelineId),
      taskId: text(raw.taskId),
      tryNumber: typeof raw.tryNumber === "number" ? raw.tryNumber : null,
      batchId: text(raw.batchId),
      businessDate: text(raw.businessDate),
      frozenOverride: text(raw.frozenOverride),
      writtenAt: String(raw.at),
    });
  }
  return entries;
}

/** A fixed-width table for a terminal, newest first, like `formatHistory` for tables. */
export function formatFileHistory(entries: readonly FileHistoryEntry[]): string {
  if (entries.length === 0) return "no writes recorded";
  const header = ["id", "written at", "operation", "partition", "written", "run", "task", "try", "version", "note"];
  const rows = entries.map((e) => [
    String(e.id),
    e.writtenAt.replace("T", " ").replace(/\.\d+Z$/, "Z"),
    "swapPartition",
    e.partition,
    String(e.rows),
    e.runId ?? "-",
    e.taskId ?? "-",
    e.tryNumber === null ? "-" : String(e.tryNumber),
    e.version.split("/").at(-1)!,
    e.frozenOverride ? `frozen opened: ${e.frozenOverride}` : "",
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}
