import { randomBytes } from "node:crypto";
import { appendFile, link, mkdir, readdir, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DefinitionError } from "../../core/model/errors.ts";
import type { Check } from "../checks.ts";
import type { WriteContext } from "../context.ts";
import { guardFrozen, type FrozenPeriod } from "../frozen.ts";
import type { Source } from "../source.ts";
import type { StepHook } from "../steps.ts";
import { fsyncPath, publishFile } from "./atomic-file.ts";
import { stageToFile } from "./file-stage.ts";
import { stagingPath, workspaceOf } from "./workspace.ts";
import { checkPartitionColumn, checkPartitionValue } from "./names.ts";

export interface PartitionSwapOptions {
  /** The dataset's directory; partitions are `root/<column>=<value>/`. */
  root: string;
  column: string;
  value: string;
  source: Source;
  format?: "parquet" | "csv";
  checks?: readonly Check[];
  context: WriteContext;
  frozen?: readonly FrozenPeriod[];
  openFrozen?: { reason: string };
  /** Replaced versions kept for inspection (default 3); older ones are deleted. */
  keepVersions?: number;
  onStep?: StepHook;
  /** Rows per batch when rows are moved into the staging database. */
  batchRows?: number;
  now?: () => Date;
}

export interface PartitionSwapSummary {
  path: string;
  rowsWritten: number;
  /** Where the replaced file was kept, or null when the partition is new. */
  previousVersion: string | null;
  frozenOverride: string | null;
}

export function partitionFile(root: string, column: string, value: string, format: "parquet" | "csv" = "parquet"): string {
  return join(root, `${checkPartitionColumn(column)}=${checkPartitionValue(column, value)}`, `part-0.${format}`);
}

/**
 * Replaces one partition. Each partition holds exactly one data file, so publishing is one
 * rename over it: a reader opens the old file or the new one, never a mix, a half-written file
 * or a temporary one. The new file is staged, checked and read back in the workspace first; the
 * old one is hard-linked into the workspace's versions before it is replaced.
 */
export async function swapPartition(options: PartitionSwapOptions): Promise<PartitionSwapSummary> {
  const format = options.format ?? "parquet";
  const { root, column, value } = options;
  const path = partitionFile(root, column, value, format);
  const name = `${column}=${value}`;
  const label = `${root}/${name}`;
  const keep = options.keepVersions ?? 3;
  if (!Number.isInteger(keep) || keep < 0) throw new DefinitionError(`${label}: keepVersions must be a whole number >= 0`);
  const dates = [value, options.context.businessDate].filter((d): d is string => typeof d === "string" && /^\d{4}-\d{2}-\d{2}$/.test(d));
  const frozenOverride = guardFrozen(label, dates.map((d) => ({ from: d, to: d })), options.frozen, options.openFrozen);
  const step = async (s: Parameters<StepHook>[0], rows?: number) => options.onStep?.(s, rows === undefined ? { table: label } : { table: label, rows });

  const partitionDir = dirname(path);
  await refuseForeignFiles(partitionDir, basename(path), label);
  const workspace = workspaceOf(root);
  const stagedFile = await stagingPath(root, name, format);
  try {
    const rows = await stageToFile({
      source: options.source,
      path: stagedFile,
      format,
      checks: options.checks ?? [],
      label,
      omit: column,
      omitEquals: value,
      onRows: (n) => step("staging", n),
      ...(options.batchRows ? { batchRows: options.batchRows } : {}),
      onStep: (s, rows) => step(s, rows),
    });

    await mkdir(partitionDir, { recursive: true });
    let previousVersion: string | null = null;
    if (existsSync(path)) {
      const versions = join(workspace, "versions", name);
      await mkdir(versions, { recursive: true });
      const stamp = (options.now?.() ?? new Date()).toISOString().replace(/[-:.]/g, "");
      previousVersion = join(versions, `${stamp}-${options.context.runId.replace(/[^A-Za-z0-9_-]/g, "_")}-${randomBytes(3).toString("hex")}.${format}`);
      await link(path, previousVersion);
    }
    await publishFile(stagedFile, path);
    await step("published", rows);
    await pruneVersions(join(workspace, "versions", name), keep);
    await appendFileHistory(workspace, { partition: name, path, rows, previousVersion, context: options.context, frozenOverride, at: (options.now?.() ?? new Date()).toISOString() });
    await step("committed", rows);
    return { path, rowsWritten: rows, previousVersion, frozenOverride };
  } finally {
    await rm(stagedFile, { force: true });
  }
}

async function refuseForeignFiles(partitionDir: string, ours: string, label: string) {
  if (!existsSync(partitionDir)) return;
  const foreign = (await readdir(partitionDir)).filter((f) => f !== ours);
  if (foreign.length > 0) {
    throw new DefinitionError(`${label}: the partition holds file(s) idem did not write (${foreign.slice(0, 3).join(", ")}); replacing it would leave a mix`);
  }
}

async function pruneVersions(dir: string, keep: number) {
  if (!existsSync(dir)) return;
  const files = (await readdir(dir)).sort();
  for (const old of files.slice(0, Math.max(0, files.length - keep))) await rm(join(dir, old), { force: true });
}

async function appendFileHistory(workspace: string, entry: Record<string, unknown> & { context: WriteContext }) {
  const file = join(workspace, "history.jsonl");
  const { context, ...rest } = entry;
  const line = JSON.stringify({ ...rest, runId: context.runId, pipelineId: context.pipelineId, taskId: context.taskId, tryNumber: context.tryNumber, batchId: context.batchId ?? null }) + "\n";
  await appendFile(file, line);
  await fsyncPath(file);
}

