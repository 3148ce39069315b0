import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DataError, DefinitionError } from "../../src/core/model/errors.ts";
import {
  checkPartitionValue, currentPartitionFiles, openDuckDB, readManifest, requireManifest, sql, swapPartition, waitForManifest, workspaceOf, writeFileAtomic, writeManifest, writeRowsFile,
  type WriteContext,
} from "../../src/data/index.ts";
import { cleanTempDirs, tempDir } from "./targets.ts";

const context: WriteContext = { runId: "run-1", pipelineId: "shop", taskId: "export", tryNumber: 1, businessDate: "2026-09-01" };
const orders = (date: string, ids: number[]) => ({ rows: ids.map((id) => ({ order_id: id, amount: id * 1.5, order_date: date })), columns: { order_id: "bigint", amount: "double", order_date: "date" } as const });

async function readDataset(root: string): Promise<string[]> {
  const duck = await openDuckDB(":memory:");
  try {
    const rows = await duck.query(sql`SELECT CAST(order_date AS VARCHAR) AS d, order_id FROM read_parquet(${join(root, "*/*.parquet")}, hive_partitioning = true) ORDER BY d, order_id`);
    return rows.map((r) => `${String(r.d)}#${String(r.order_id)}`);
  } finally {
    await duck.close();
  }
}

afterAll(cleanTempDirs);

describe("file partition swap", () => {
  it("writes root/<column>=<value>/ and DuckDB reads it with hive partitioning", async () => {
    const root = join(tempDir(), "orders");
    const result = await swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [1, 2]), context });
    await swapPartition({ root, column: "order_date", value: "2026-09-02", source: orders("2026-09-02", [3]), context });
    expect(result).toMatchObject({ path: join(root, "order_date=2026-09-01", "part-0.parquet"), rowsWritten: 2, previousVersion: null });
    expect(await readDataset(root)).toEqual(["2026-09-01#1", "2026-09-01#2", "2026-09-02#3"]);
  });

  it("replaces a partition whole when run again, and keeps the replaced files as versions", async () => {
    const root = join(tempDir(), "orders");
    for (const ids of [[1, 2], [1], [4], [5, 6]]) {
      await swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", ids), context, keepVersions: 2, versionGraceMs: 0 });
    }
    expect(await readDataset(root)).toEqual(["2026-09-01#5", "2026-09-01#6"]);
    // The current version and the two replaced before it; the part file is a link to the current one.
    const versions = join(workspaceOf(root), "versions", "order_date=2026-09-01");
    expect(readdirSync(versions)).toHaveLength(3);
    const part = join(root, "order_date=2026-09-01", "part-0.parquet");
    expect(lstatSync(part).isSymbolicLink()).toBe(true);
    expect(await currentPartitionFiles(root)).toEqual([realpathSync(part)]);
    expect(realpathSync(part).startsWith(realpathSync(versions))).toBe(true);
    expect(readdirSync(root)).toEqual(["order_date=2026-09-01"]);
    expect(readdirSync(join(workspaceOf(root), "staging"))).toEqual([]);
  });

  it("refuses rows of another partition and a failed check, leaving the old partition in place", async () => {
    const root = join(tempDir(), "orders");
    await swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [1]), context });
    await expect(swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-02", [2]), context })).rejects.toThrow(/1 staged row\(s\) fall outside order_date = 2026-09-01/);
    await expect(swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [-3]), context, checks: [{ nonNegative: "order_id" }] })).rejects.toThrow(DataError);
    expect(await readDataset(root)).toEqual(["2026-09-01#1"]);
  });

  it("writes CSV partitions too", async () => {
    const root = join(tempDir(), "orders");
    await swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [7]), context, format: "csv" });
    expect(readFileSync(join(root, "order_date=2026-09-01", "part-0.csv"), "utf8").trim().split("\n")).toEqual(["order_id,amount", "7,10.5"]);
  });

  it("refuses to swap a partition holding files it did not write", async () => {
    const root = join(tempDir(), "orders");
    mkdirSync(join(root, "order_date=2026-09-01"), { recursive: true });
    writeFileSync(join(root, "order_date=2026-09-01", "other.parquet"), "");
    await expect(swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [1]), context })).rejects.toThrow(/holds file\(s\) idem did not write \(other\.parquet\)/);
  });

  it("refuses partition values that could leave the root or hide", () => {
    for (const bad of ["", "a/b", "..", "x/../y", "a\\b", "tab\there", ".hidden", "nul\u0000"]) {
      expect(() => checkPartitionValue("order_date", bad)).toThrow(DefinitionError);
    }
    expect(checkPartitionValue("order_date", "2026-09-01")).toBe("2026-09-01");
  });

  it("refuses a frozen partition unless opened with a reason", async () => {
    const root = join(tempDir(), "orders");
    const frozen = [{ from: "2026-09-01", to: "2026-09-30", owner: "finance", reason: "September closed" }];
    await expect(swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [1]), context, frozen })).rejects.toThrow(/frozen period 2026-09-01\.\.2026-09-30 \(finance: September closed\)/);
    expect(existsSync(root)).toBe(false);
    const opened = await swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [1]), context, frozen, openFrozen: { reason: "fix" } });
    expect(opened.frozenOverride).toBe("fix");
  });
});

describe("single-file writes", () => {
  it("writes day.parquet, day.csv and day.json whole, leaving no temporary file", async () => {
    const dir = tempDir();
    for (const name of ["day.parquet", "day.csv", "day.json"]) {
      const result = await writeRowsFile({ path: join(dir, name), source: orders("2026-09-01", [1, 2, 3]) });
      expect(result.rowsWritten).toBe(3);
    }
    expect(readdirSync(dir).sort()).toEqual(["day.csv", "day.json", "day.parquet"]);
    expect(JSON.parse(readFileSync(join(dir, "day.json"), "utf8"))).toHaveLength(3);
  });

  it("leaves the old file in place when a check fails", async () => {
    const dir = tempDir();
    await writeRowsFile({ path: join(dir, "day.parquet"), source: orders("2026-09-01", [1]) });
    await expect(writeRowsFile({ path: join(dir, "day.parquet"), source: orders("2026-09-01", [1, 1]), checks: [{ uniqueKey: "order_id" }] })).rejects.toThrow(/check uniqueKey\(order_id\) failed/);
    expect(readdirSync(dir)).toEqual(["day.parquet"]);
  });

  it("writeFileAtomic replaces a file's content in one step", async () => {
    const file = join(tempDir(), "state.json");
    await writeFileAtomic(file, "{\"a\":1}");
    await writeFileAtomic(file, "{\"a\":2}");
    expect(readFileSync(file, "utf8")).toBe("{\"a\":2}");
  });
});

describe("manifests", () => {
  it("is written after the data files and lists their rows and sizes", async () => {
    const dir = tempDir();
    await writeRowsFile({ path: join(dir, "day.parquet"), source: orders("2026-09-01", [1, 2]) });
    const manifest = await writeManifest(dir, { context, businessDates: ["2026-09-01"], watermark: 42, files: [{ path: "day.parquet", rows: 2 }] });
    expect(manifest).toMatchObject({ runId: "run-1", businessDates: ["2026-09-01"], watermark: 42, totalRows: 2 });
    expect(readManifest(dir)?.files[0]).toMatchObject({ path: "day.parquet", rows: 2 });
    await expect(requireManifest(dir, { businessDate: "2026-09-01" })).resolves.toMatchObject({ runId: "run-1" });
  });

  it("cannot be written before the data files it lists", async () => {
    await expect(writeManifest(tempDir(), { context, businessDates: [], files: [{ path: "day.parquet", rows: 1 }] })).rejects.toThrow(/day\.parquet does not exist/);
  });

  it("readers refuse a directory without one, or one whose files changed since", async () => {
    const dir = tempDir();
    await expect(requireManifest(dir)).rejects.toThrow(/no _manifest\.json; its writer has not finished, refusing to read/);
    writeFileSync(join(dir, "a.csv"), "x\n1\n");
    await writeManifest(dir, { context, businessDates: ["2026-09-01"], files: [{ path: "a.csv", rows: 1 }] });
    writeFileSync(join(dir, "a.csv"), "x\n1\n2\n");
    await expect(requireManifest(dir)).rejects.toThrow(/a\.csv is 6 bytes, the manifest says 4/);
    await expect(requireManifest(dir, { businessDate: "2026-09-02" })).rejects.toThrow(/covers 2026-09-01, not 2026-09-02/);
  });

  it("carry content hashes: a file rewritten to the same size since is refused", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "a.csv"), "x\n1\n");
    const manifest = await writeManifest(dir, { context, businessDates: ["2026-09-01"], files: [{ path: "a.csv", rows: 1 }] });
    expect(manifest.files[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(join(dir, "a.csv"), "x\n2\n"); // same size, other content
    await expect(requireManifest(dir)).rejects.toThrow(/a\.csv changed since run run-1 wrote its manifest \(content hash differs\)/);
    const old = { ...readManifest(dir)!, files: [{ path: "a.csv", rows: 1, bytes: 4 }] };
    writeFileSync(join(dir, "_manifest.json"), JSON.stringify(old));
    await expect(requireManifest(dir)).rejects.toThrow(/has no content hash for a\.csv \(written by an older idem\)/);
  });

  it("is removed by a rerun before it touches a data file, so a rerun that fails half-way is never vouched for", async () => {
    const dir = tempDir();
    const path = join(dir, "day.parquet");
    await writeRowsFile({ path, source: orders("2026-09-01", [1, 2]) });
    await writeManifest(dir, { context, businessDates: ["2026-09-01"], files: [{ path: "day.parquet", rows: 2 }] });
    // A rerun whose check fails touches no data file: the manifest still stands.
    await expect(writeRowsFile({ path, source: orders("2026-09-01", [-1, -2]), checks: [{ nonNegative: "order_id" }] })).rejects.toThrow(DataError);
    await expect(requireManifest(dir)).resolves.toMatchObject({ runId: "run-1" });
    // A rerun that replaces the data file and dies before its own manifest leaves none.
    const dies = () => { throw new Error("killed before the manifest"); };
    await expect(writeRowsFile({ path, source: orders("2026-09-01", [3, 4]), onStep: (step) => (step === "published" ? dies() : undefined) })).rejects.toThrow(/killed/);
    await expect(requireManifest(dir)).rejects.toThrow(/no _manifest\.json; its writer has not finished/);
    // The same for a partition swap over a manifested dataset.
    const root = join(tempDir(), "orders");
    await swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [1]), context });
    await writeManifest(root, { context, businessDates: ["2026-09-01"], files: [{ path: "order_date=2026-09-01/part-0.parquet", rows: 1 }] });
    await expect(requireManifest(root)).resolves.toMatchObject({ totalRows: 1 });
    await swapPartition({ root, column: "order_date", value: "2026-09-01", source: orders("2026-09-01", [2]), context });
    expect(existsSync(join(root, "_manifest.json"))).toBe(false);
  });

  it("a reader waits for the manifest, and times out with a clear error", async () => {
    const dir = tempDir();
    await expect(waitForManifest(dir, { timeoutMs: 100, pollMs: 20 })).rejects.toThrow(/no _manifest\.json after 100 ms; refusing to read/);
    writeFileSync(join(dir, "a.csv"), "x\n1\n");
    setTimeout(() => void writeManifest(dir, { context, businessDates: ["2026-09-01"], files: [{ path: "a.csv", rows: 1 }] }), 50);
    await expect(waitForManifest(dir, { timeoutMs: 5000, pollMs: 10, businessDate: "2026-09-01" })).resolves.toMatchObject({ totalRows: 1 });
  });
});
