/**
 * idem/data: loaders whose writes leave the same rows however often they run and wherever they
 * are killed. Read -> stage -> check -> publish atomically -> record; a failed check publishes nothing.
 */
export { sql, ident, type Sql, type SqlValue } from "./sql.ts";
export type { Column, ColumnType, SchemaInput } from "./schema.ts";
export type { Target, TableColumn, Row, ErrorExplanation } from "./target.ts";
export { openDuckDB, duckdbTarget, type DuckDBTarget } from "./targets/duckdb.ts";
export { openSQLite, type SQLiteTarget } from "./targets/sqlite.ts";
export { openPostgres, postgresTarget, type PostgresTarget, type PostgresOptions } from "./targets/postgres.ts";
export { openTarget } from "./open-target.ts";
export type { Source, FileSource, CsvSource, JsonSource, ParquetSource, QuerySource, RowsSource } from "./sources/source.ts";
export { describePredicate, type Predicate } from "./predicate.ts";
export { runChecks, checkTable, checkName, type Check, type CheckScope, type CheckFailure } from "./checks.ts";
export { writeContextFrom, type WriteContext } from "./context.ts";
export type { WriteStep, StepInfo, StepHook } from "./steps.ts";
export { FrozenPeriodError, type FrozenPeriod } from "./frozen.ts";
export { readHistory, formatHistory, type HistoryEntry, type Operation } from "./history.ts";
export { readFileHistory, formatFileHistory, type FileHistoryEntry } from "./files/file-history.ts";
export type { LoadOptions, WriteSummary } from "./loaders/common.ts";
export { replaceWhere, type ReplaceWhereOptions } from "./loaders/replace-where.ts";
export { replaceKey, keyBatchId, type ReplaceKeyOptions } from "./loaders/replace-key.ts";
export { mergeByKey, type MergeByKeyOptions, type MergeSummary } from "./loaders/merge.ts";
export { plainAppend, batchSink } from "./loaders/append.ts";
export { swapPartition, partitionFile, type PartitionSwapOptions, type PartitionSwapSummary } from "./files/partition-swap.ts";
export { writeRowsFile, type WriteFileOptions } from "./files/single-file.ts";
export { writeFileAtomic } from "./files/atomic-file.ts";
export { workspaceOf } from "./files/workspace.ts";
export { checkPartitionValue } from "./files/names.ts";
export { writeManifest, readManifest, requireManifest, waitForManifest, invalidateManifest, MANIFEST_NAME, type Manifest, type ManifestFile } from "./files/manifest.ts";
export { currentPartitionFiles } from "./files/partition-versions.ts";
export { currentPartitionQuery, currentQueryPath, readCurrentQuery } from "./files/current-query.ts";
export { incrementalLoad, type IncrementalOptions, type IncrementalSummary } from "./loaders/incremental.ts";
export { memoryWatermarkStore, tableWatermarkStore, compareWatermarks, subtractLookback, type Watermark, type WatermarkStore } from "./watermark.ts";
export { tableContentHash, hashRows } from "./content-hash.ts";
