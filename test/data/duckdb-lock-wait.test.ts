import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openDuckDB } from "../../src/data/targets/duckdb.ts";

let dir = "";
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it("waits for another process's lock on a DuckDB file instead of failing, then opens it", async () => {
  dir = mkdtempSync(join(tmpdir(), "idem-duck-lock-"));
  const file = join(dir, "warehouse.duckdb");
  // another process holds the file for a second, as a second task's host would
  const holder = spawn(process.execPath, ["--input-type=module", "-e", `
    const { DuckDBInstance } = await import("@duckdb/node-api");
    const instance = await DuckDBInstance.create(${JSON.stringify(file)});
    const c = await instance.connect();
    await c.run("CREATE TABLE t AS SELECT 42 AS v");
    console.log("held");
    setTimeout(() => { c.closeSync(); instance.closeSync(); process.exit(0); }, 1000);
  `], { cwd: process.cwd(), stdio: ["ignore", "pipe", "inherit"] });
  await new Promise<void>((resolve) => holder.stdout!.on("data", (d) => String(d).includes("held") && resolve()));
  const target = await openDuckDB(file);
  try {
    const rows = await target.connection.runAndReadAll("SELECT v FROM t");
    expect(rows.getRows()).toEqual([[42]]);
  } finally {
    target.close();
  }
}, 30_000);
