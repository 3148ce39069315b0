import { execFileSync } from "node:child_process";
import { constants, createReadStream } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { withMemoryDuckDB } from "./duckdb-read.ts";
import type { RowsProgress } from "./source.ts";
import { sql, type Sql } from "../sql.ts";
import type { TableColumn, Target } from "../target.ts";

/**
 * DuckDB writes the rows as CSV (in C++, fast) and the target's bulk loader reads them. Where the
 * system has named pipes the two run at the same time through one; elsewhere through a scratch
 * file. Progress counts lines, so it is approximate when values hold newlines.
 */
export async function copyThroughCsv(target: Target, table: string, columns: readonly TableColumn[], select: Sql, onRows?: RowsProgress): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "idem-copy-"));
  const path = join(dir, "rows.csv");
  const writeCsv = () => withMemoryDuckDB((duck) => duck.exec(sql`COPY (${select}) TO ${path} (FORMAT csv, HEADER false)`));
  let lines = 0;
  const copy = () =>
    target.copyCsv!(table, columns, createReadStream(path, { highWaterMark: 1 << 20 }), async (chunk) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      await onRows?.(lines);
    });
  try {
    await onRows?.(0);
    if (!makeFifo(path)) {
      await writeCsv();
      return await copy();
    }
    const writing = writeCsv().catch(async (error: unknown) => {
      // The reader may be waiting for a writer to open the pipe; give it one, and an end.
      await closeFifoWriter(path);
      throw error;
    });
    const [written, wrote] = await Promise.allSettled([copy(), writing]);
    if (wrote.status === "rejected") throw wrote.reason;
    if (written.status === "rejected") throw written.reason;
    return written.value;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function makeFifo(path: string): boolean {
  if (process.platform === "win32") return false;
  try {
    execFileSync("mkfifo", ["-m", "600", path], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

async function closeFifoWriter(path: string): Promise<void> {
  try {
    const handle = await open(path, constants.O_WRONLY | constants.O_NONBLOCK);
    await handle.close();
  } catch {
    // No reader is waiting: nothing to unblock.
  }
}
