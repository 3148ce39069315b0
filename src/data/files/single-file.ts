import { mkdir, rm } from "node:fs/promises";
import { basename, dirname, extname } from "node:path";
import { DefinitionError } from "../../core/model/errors.ts";
import type { Check } from "../checks.ts";
import type { Source } from "../sources/source.ts";
import type { StepHook } from "../steps.ts";
import { publishFile } from "./atomic-file.ts";
import { invalidateManifest } from "./manifest.ts";
import { stagingPath } from "./workspace.ts";
import { stageToFile, type FileFormat } from "./file-stage.ts";
import type { WriteContext } from "../context.ts";

export interface WriteFileOptions {
  /** `day.parquet`, `day.csv` or `day.json`; the extension picks the format. */
  path: string;
  source: Source;
  checks?: readonly Check[];
  onStep?: StepHook;
  /** Rows per batch when rows are moved into the staging database. */
  batchRows?: number;
  /** Whose write it is (`writeContextFrom(ctx)`): named in a failure's one line. */
  context?: WriteContext;
}

/**
 * Writes one whole file of rows: staged and checked in DuckDB, written in the directory's
 * workspace, read back, then renamed over the target. Readers never see a partial file. A
 * manifest in the directory is removed first, so a rerun that fails half-way is never vouched for.
 */
export async function writeRowsFile(options: WriteFileOptions): Promise<{ path: string; rowsWritten: number }> {
  const ext = extname(options.path).slice(1).toLowerCase();
  if (ext !== "parquet" && ext !== "csv" && ext !== "json") throw new DefinitionError(`${options.path}: expected a .parquet, .csv or .json file`);
  const step = async (s: Parameters<StepHook>[0], rows?: number) => options.onStep?.(s, rows === undefined ? { table: options.path } : { table: options.path, rows });
  await mkdir(dirname(options.path), { recursive: true });
  const temporary = await stagingPath(dirname(options.path), basename(options.path), ext);
  try {
    const rows = await stageToFile({
      source: options.source,
      path: temporary,
      format: ext as FileFormat,
      checks: options.checks ?? [],
      label: options.path,
      ...(options.context ? { context: options.context } : {}),
      onRows: (n) => step("staging", n),
      ...(options.batchRows ? { batchRows: options.batchRows } : {}),
      onStep: (s, rows) => step(s, rows),
    });
    // The directory's manifest says "complete as listed": it goes before the data changes.
    await invalidateManifest(dirname(options.path));
    await publishFile(temporary, options.path);
    await step("published", rows);
    return { path: options.path, rowsWritten: rows };
  } finally {
    await rm(temporary, { force: true });
  }
}
