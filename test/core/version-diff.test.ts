import { describe, expect, it } from "vitest";
import { graphDiff } from "../../src/core/pipeline/graph-diff.ts";
import { unifiedDiff } from "../../src/core/text/unified-diff.ts";

describe("the graph diff of two versions", () => {
  it("names tasks added and removed, and a kind, dependencies or settings changed", () => {
    const from = { tasks: [
      { id: "a", kind: "function", upstream: [] },
      { id: "b", kind: "function", upstream: ["a"] },
      { id: "c", kind: "command", upstream: ["a"], command: ["true"] },
      { id: "gone", kind: "function", upstream: [] },
    ] };
    const to = { tasks: [
      { id: "a", kind: "function", upstream: [] },
      { id: "b", kind: "command", upstream: ["a", "new"], command: ["x"] },
      { id: "c", kind: "command", upstream: ["a"], command: ["false"] },
      { id: "new", kind: "sql", upstream: [] },
    ] };
    expect(graphDiff(from, to)).toEqual({
      added: ["new"],
      removed: ["gone"],
      changed: [
        { taskId: "b", changes: ["kind function -> command", "upstream [a] -> [a, new]", "settings"] },
        { taskId: "c", changes: ["settings"] },
      ],
    });
    expect(graphDiff(from, from)).toEqual({ added: [], removed: [], changed: [] });
  });
});

describe("a unified diff", () => {
  const names = { from: "a/f.ts", to: "b/f.ts" };
  it("is empty for equal texts, and prints hunks with three lines of context as diff -u does", () => {
    expect(unifiedDiff("x\n", "x\n", names)).toBe("");
    const a = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"].join("\n");
    const b = ["1", "2", "three", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13"].join("\n");
    expect(unifiedDiff(a, b, names)).toBe(
      ["--- a/f.ts", "+++ b/f.ts", "@@ -1,6 +1,6 @@", " 1", " 2", "-3", "+three", " 4", " 5", " 6",
        "@@ -10,3 +10,4 @@", " 10", " 11", " 12", "+13", ""].join("\n"),
    );
  });
  it("diffs a file against nothing when it is new", () => {
    expect(unifiedDiff("", "a\nb", names)).toBe(["--- a/f.ts", "+++ b/f.ts", "@@ -0,0 +1,2 @@", "+a", "+b", ""].join("\n"));
  });
});
