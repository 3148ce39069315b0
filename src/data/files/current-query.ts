import { open, readFile, rename, rm } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import { fsyncPath } from "./atomic-file.ts";
import { currentPartitionFiles } from "./partition-versions.ts";
import { stagingPath } from "./workspace.ts";

/**
 * One statement that reads a dataset's current versions, for readers outside idem (the duckdb
 * CLI, a notebook, a BI tool): `lake/orders.current.sql` beside `lake/orders`, holding a SELECT
 * over the exact immutable version files. A glob over the partitions' stable links can read one
 * version's metadata and the next one's data (DuckDB opens a file more than once per query); a
 * list of immutable paths cannot. The file is rewritten at every publish by writing a new one and
 * renaming it over, so a reader finds the old statement or the new one; a reader that took the old
 * one reads versions that are kept for the grace (`versionGraceMs`).
 */
export function currentQueryPath(root: string): string {
  return join(dirname(root), `${basename(root)}.current.sql`);
}

/** The statement: a SELECT (no trailing semicolon, so it nests: `CREATE VIEW v AS <it>`, `FROM (<it>)`). */
export async function currentPartitionQuery(root: string): Promise<string> {
  return queryOver(root, await currentPartitionFiles(root));
}

/** Reads the statement idem last published for the dataset at `root`. */
export async function readCurrentQuery(root: string): Promise<string> {
  return readFile(currentQueryPath(root), "utf8");
}

function queryOver(root: string, files: readonly string[]): string {
  const literal = (paths: readonly string[]) => `[${paths.map((p) => `'${p.replaceAll("'", "''")}'`).join(", ")}]`;
  const parquet = files.filter((f) => extname(f) === ".parquet");
  const csv = files.filter((f) => extname(f) === ".csv");
  const reads = [
    ...(parquet.length > 0 ? [`SELECT * FROM read_parquet(${literal(parquet)}, hive_partitioning = true)`] : []),
    ...(csv.length > 0 ? [`SELECT * FROM read_csv(${literal(csv)}, header = true, hive_partitioning = true, union_by_name = true)`] : []),
  ];
  const body = reads.length === 0 ? "SELECT NULL AS no_partitions_published WHERE false" : reads.join("\nUNION ALL BY NAME\n");
  return `-- written by idem at each publish of ${basename(root)}: the current version of every partition (immutable files)\n${body}\n`;
}

/**
 * Rewrites the statement after a publish. Two writers of two partitions may list the versions in
 * one order and rename in the other, leaving a statement that misses the later switch; so each
 * writer lists again after its rename and writes again until what it wrote is current. The last
 * rename is then always followed by a listing that saw every switch before it.
 */
export async function publishCurrentQuery(root: string): Promise<void> {
  const path = currentQueryPath(root);
  for (let round = 0; round < 100; round++) {
    const text = await currentPartitionQuery(root);
    const staged = await stagingPath(root, "current", "sql");
    try {
      const handle = await open(staged, "w");
      try {
        await handle.writeFile(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(staged, path);
      await fsyncPath(dirname(path));
    } finally {
      await rm(staged, { force: true });
    }
    if ((await currentPartitionQuery(root)) === text) return;
  }
  throw new Error(`${path}: the partitions kept changing while their statement was written (100 rounds)`);
}
