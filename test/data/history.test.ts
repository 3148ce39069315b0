import { Temporal } from "temporal-polyfill";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DefinitionError } from "../../src/core/model/errors.ts";
import { formatHistory, openDuckDB, plainAppend, readHistory, replaceWhere, writeContextFrom, type HistoryEntry } from "../../src/data/index.ts";
import { postgresUrl } from "./pg.ts";
import { cleanTempDirs, tempDir } from "./targets.ts";

afterAll(cleanTempDirs);

describe("history", () => {
  it("answers what each run wrote, newest first, limited on request, with the time from the clock given", async () => {
    const target = await openDuckDB(join(tempDir(), "w.duckdb"));
    const clock = (iso: string) => () => new Date(iso);
    const context = writeContextFrom({ runId: "shop@2026-09-01", pipelineId: "shop", taskId: "load_day", tryNumber: 1, businessDate: "2026-09-01" });
    const rows = { rows: [{ id: 1, day: "2026-09-01" }] };
    await replaceWhere({ target, table: "t", source: rows, where: { column: "day", equals: "2026-09-01" }, context, now: clock("2026-09-02T02:00:00Z") });
    await plainAppend({ target, table: "t", source: rows, context: { ...context, tryNumber: 2 }, now: clock("2026-09-02T03:00:00Z") });
    await replaceWhere({ target, table: "t", source: rows, where: { column: "day", equals: "2026-09-01" }, context: { ...context, tryNumber: 3 }, now: clock("2026-09-02T04:00:00Z") });
    const all = await readHistory(target, "t");
    expect(all.map((h) => [h.operation, h.predicate, h.rowsDeleted, h.rowsWritten, h.tryNumber, h.writtenAt])).toEqual([
      ["replaceWhere", "day = 2026-09-01", 2, 1, 3, "2026-09-02T04:00:00.000Z"],
      ["append", null, 0, 1, 2, "2026-09-02T03:00:00.000Z"],
      ["replaceWhere", "day = 2026-09-01", 0, 1, 1, "2026-09-02T02:00:00.000Z"],
    ]);
    expect(await readHistory(target, "t", { limit: 1 })).toHaveLength(1);
    expect(await readHistory(target, "other")).toEqual([]);
    await target.close();
  });

  it("reads as an empty list from a target nothing was written to", async () => {
    const target = await openDuckDB(":memory:");
    expect(await readHistory(target, "t")).toEqual([]);
    await target.close();
  });

  it("formats as a table a terminal can show, with no predicate for an append", () => {
    const entry: HistoryEntry = {
      id: 2, table: "t", operation: "append", predicate: null, rowsDeleted: 0, rowsInserted: 3, rowsUpdated: 0, rowsUnchanged: 0, rowsWritten: 3,
      runId: "shop@2026-09-01", pipelineId: "shop", taskId: "load_day", tryNumber: 2, batchId: null, businessDate: "2026-09-01", frozenOverride: "audit fix", writtenAt: "2026-09-02T03:00:00.000Z",
    };
    const text = formatHistory([entry, { ...entry, id: 1, operation: "replaceWhere", predicate: "day = 2026-09-01", frozenOverride: null }]);
    expect(text.split("\n")).toEqual([
      "id  written at            operation     predicate         deleted  written  run              task      try  batch  note",
      "2   2026-09-02 03:00:00Z  append        -                 0        3        shop@2026-09-01  load_day  2    -      frozen opened: audit fix",
      "1   2026-09-02 03:00:00Z  replaceWhere  day = 2026-09-01  0        3        shop@2026-09-01  load_day  2    -",
    ]);
    expect(formatHistory([])).toBe("no writes recorded");
  });
});

describe("the write context", () => {
  it("is taken from any object with the task context's fields", () => {
    const ctx = { runId: "r", pipelineId: "p", taskId: "t", tryNumber: 2, businessDate: "2026-09-01", params: {}, log: {} };
    expect(writeContextFrom(ctx, { batchId: "b-7" })).toEqual({ runId: "r", pipelineId: "p", taskId: "t", tryNumber: 2, businessDate: "2026-09-01", mapKey: null, batchId: "b-7", trigger: null, interval: null });
    const start = Temporal.ZonedDateTime.from("2026-09-01T00:00[Europe/London]");
    const withRun = writeContextFrom({ ...ctx, trigger: "backfill", interval: { start, end: start.add({ days: 1 }) } });
    expect(withRun).toMatchObject({ trigger: "backfill", interval: { start: "2026-09-01T00:00:00+01:00", end: "2026-09-02T00:00:00+01:00" } });
    expect(() => writeContextFrom({ ...ctx, runId: "" })).toThrow(DefinitionError);
  });
});

describe("the PostgreSQL test server helper", () => {
  const saved = { url: process.env.IDEM_TEST_PG_URL, ci: process.env.CI };
  afterAll(() => {
    if (saved.url === undefined) delete process.env.IDEM_TEST_PG_URL;
    else process.env.IDEM_TEST_PG_URL = saved.url;
    if (saved.ci === undefined) delete process.env.CI;
    else process.env.CI = saved.ci;
  });

  it("skips with a reason locally, but fails under CI=true, when no server is given", () => {
    delete process.env.IDEM_TEST_PG_URL;
    process.env.CI = "false";
    expect(postgresUrl()).toEqual({ url: null, reason: expect.stringContaining("IDEM_TEST_PG_URL is not set") });
    process.env.CI = "true";
    expect(() => postgresUrl()).toThrow(/PostgreSQL tests cannot run under CI=true/);
    process.env.IDEM_TEST_PG_URL = "postgres://x@127.0.0.1:1/y";
    expect(postgresUrl().url).toBe("postgres://x@127.0.0.1:1/y");
  });
});
