import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { passthroughColumns, recordsWithConstants } from "../../src/data/sources/csv-passthrough.ts";
import { sourceSpec, type CsvSource, type CsvSpec } from "../../src/data/sources/source.ts";
import { cleanTempDirs, tempDir } from "./targets.ts";

afterAll(cleanTempDirs);

function file(content: string): string {
  const path = join(tempDir(), "f.csv");
  writeFileSync(path, content);
  return path;
}

async function records(path: string, constants: (string | null)[] = ["2026-09-01"]): Promise<string> {
  let out = "";
  for await (const chunk of recordsWithConstants(path, constants)) out += chunk.toString("utf8");
  return out;
}

describe("passing a CSV file straight to a bulk loader", () => {
  it("drops the header and appends the constant columns to every record", async () => {
    expect(await records(file("a,b\n1,x\n2,y\n"))).toBe("1,x,2026-09-01\n2,y,2026-09-01\n");
  });

  it("keeps commas, quotes and newlines inside quoted values in their record", async () => {
    expect(await records(file('a,b\n1,"x,\ny ""z"""\n2,w\n'))).toBe('1,"x,\ny ""z""",2026-09-01\n2,w,2026-09-01\n');
  });

  it("handles CRLF line ends, blank lines and a last record without a newline", async () => {
    expect(await records(file("a,b\r\n1,x\r\n\r\n2,y"))).toBe("1,x,2026-09-01\n2,y,2026-09-01\n");
  });

  it("quotes constants that need it and writes null as an empty field", async () => {
    expect(await records(file("a\n1\n"), ["it's, \"q\"", null, ""])).toBe('1,"it\'s, ""q""",,""\n');
  });

  it("finds record ends across chunk boundaries, even inside a long quoted value", async () => {
    const long = "x".repeat(3 << 20);
    const out = await records(file(`a,b\n1,"${long}\n${long}"\n2,y\n`));
    expect(out.split("\n").length).toBe(4);
    expect(out.endsWith('",2026-09-01\n2,y,2026-09-01\n')).toBe(true);
  });

  it("is used only when the header names exactly the declared columns", async () => {
    const columns = [{ name: "a", sqlType: "bigint" }, { name: "b", sqlType: "text" }, { name: "d", sqlType: "date" }];
    const csv = (source: CsvSource) => sourceSpec(source, "test") as CsvSpec;
    const src = (content: string, extra = {}) => csv({ csv: file(content), columns: { a: "bigint", b: "text" } as const, constants: { d: "2026-09-01" }, ...extra });
    expect(await passthroughColumns(src("a,b\n1,x\n"), columns)).toEqual(["a", "b", "d"]);
    expect(await passthroughColumns(src("b,a\nx,1\n"), columns)).toBeNull();
    expect(await passthroughColumns(src('"a",b\n1,x\n'), columns)).toBeNull();
    expect(await passthroughColumns(src("a;b\n1;x\n", { delimiter: ";" }), columns)).toBeNull();
    expect(await passthroughColumns(csv({ csv: file("a,b\n"), constants: { d: "2026-09-01" } }), columns)).toBeNull();
  });
});
