import { mkdir, readdir, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DefinitionError } from "../../core/model/errors.ts";
import type { Check } from "../checks.ts";
import type { WriteContext } from "../context.ts";
import { guardFrozen, type FrozenPeriod } from "../frozen.ts";
import type { Source } from "../sources/source.ts";
import type { StepHook } from "../steps.ts";
import { appendFileHistory } from "./file-history.ts";
import { invalidateManifest, MANIFEST_NAME } from "./manifest.ts";
import { publishVersion, pruneVersions } from "./partition-versions.ts";
import { publishCurrentQuery } from "./current-query.ts";
import { stageToFile } from "./file-stage.ts";
import { stagingPath } from "./workspace.ts";
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
  /** Replaced versions kept for inspection (default 3); older ones are deleted once past the grace. */
  keepVersions?: number;
  /** A replaced version is kept at least this long, for readers that resolved it just before (default 10 minutes). */
  versionGraceMs?: number;
  onStep?: StepHook;
  /** Rows per batch when rows are moved into the staging database. */
  batchRows?: number;
  now?: () => Date;
}

export interface PartitionSwapSummary {
  path: string;
  rowsWritten: number;
  /** The immutable file now published (the partition's part file links to it). */
  version: string;
  /** The version it replaced (still there for a grace), or null when the partition is new. */
  previousVersion: string | null;
  frozenOverride: string | null;
}

export function partitionFile(root: string, column: string, value: string, format: "parquet" | "csv" = "parquet"): string {
  return join(root, `${checkPartitionColumn(column)}=${checkPartitionValue(column, value)}`, `part-0.${format}`);
}

/**
 * Replaces one partition. The new file is staged, checked and read back in the workspace, moved
 * in as a new immutable version, and the partition's one part file (a symbolic link) is switched
 * to it by one rename: a reader opens the old version or the new one, never a mix, a half-written
 * file or a temporary one. Readers that resolve the links first (`currentPartitionFiles`) read
 * paths whose content never changes, so nothing cached by path can mix two versions either.
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
  const stagedFile = await stagingPath(root, name, format);
  try {
    const rows = await stageToFile({
      source: options.source,
      path: stagedFile,
      format,
      checks: options.checks ?? [],
      label,
      context: options.context,
      omit: column,
      omitEquals: value,
      onRows: (n) => step("staging", n),
      ...(options.batchRows ? { batchRows: options.batchRows } : {}),
      onStep: (s, rows) => step(s, rows),
    });

    await mkdir(partitionDir, { recursive: true });
    const now = options.now?.() ?? new Date();
    // A manifest over this data says "complete as listed": it goes before any data file changes.
    await invalidateManifest(root);
    await invalidateManifest(partitionDir);
    const { version, previous: previousVersion } = await publishVersion({ root, partition: name, staged: stagedFile, path, format, runId: options.context.runId, now });
    await step("published", rows);
    await publishCurrentQuery(root);
    await pruneVersions(root, name, version, keep, options.versionGraceMs ?? 10 * 60_000, now.getTime());
    await appendFileHistory(root, { partition: name, path, version, rows, previousVersion, context: options.context, frozenOverride, at: now.toISOString() });
    await step("committed", rows);
    return { path, rowsWritten: rows, version, previousVersion, frozenOverride };
  } finally {
    await rm(stagedFile, { force: true });
  }
}

async function refuseForeignFiles(partitionDir: string, ours: string, label: string) {
  if (!existsSync(partitionDir)) return;
  const foreign = (await readdir(partitionDir)).filter((f) => f !== ours && f !== MANIFEST_NAME);
  if (foreign.length > 0) {
    throw new DefinitionError(`${label}: the partition holds file(s) idem did not write (${foreign.slice(0, 3).join(", ")}); replacing it would leave a mix`);
  }
}
