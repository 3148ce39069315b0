import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, hashCanonicalJson, writeCanonicalJson } from "../../../src/core/pipeline/canonical-json.ts";

/** What canonical JSON was before it was written in pieces: a sorted copy, stringified at once. */
function sortedCopyJson(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v && typeof v === "object" && !(v instanceof Date)) {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v).sort()) {
        const item = (v as Record<string, unknown>)[key];
        if (item !== undefined && typeof item !== "function") out[key] = sortKeys(item);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(sortKeys(value));
}

// Keys that JSON orders differently from a sort ("10" before "9", indices before names), values
// that JSON drops or writes as null, and text that needs escaping.
const key = fc.oneof(fc.constantFrom("0", "1", "9", "10", "a", "B", "__x", "é", "tasks", "id"), fc.string({ maxLength: 4 }).filter((k) => k !== "__proto__"));
const leaf = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.string(), fc.constant(undefined), fc.constant(() => 1), fc.date({ noInvalidDate: true }));
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: "small" }, leaf, fc.array(tie("node"), { maxLength: 5 }), fc.dictionary(key, tie("node"), { maxKeys: 6 })),
})).node;

describe("canonical JSON written in pieces", () => {
  it("is the text of the sorted copy, whatever the value, and so hashes the same", () => {
    fc.assert(fc.property(fc.dictionary(key, value, { maxKeys: 8 }), (input) => {
      const expected = sortedCopyJson(input);
      const pieces: string[] = [];
      writeCanonicalJson(input, (chunk) => pieces.push(chunk));
      expect(pieces.join("")).toBe(expected);
      expect(canonicalJson(input)).toBe(expected);
      expect(hashCanonicalJson(input)).toBe(createHash("sha256").update(expected).digest("hex"));
    }), { numRuns: 500 });
  });

  it("hashes a text longer than its buffer as one text", () => {
    const tasks = Array.from({ length: 5_000 }, (_, i) => ({ id: `t${i}`, upstream: i ? [`t${i - 1}`] : [], policy: { retries: i % 3 } }));
    const expected = sortedCopyJson({ id: "wide", tasks });
    expect(expected.length).toBeGreaterThan(65_536 * 3);
    expect(hashCanonicalJson({ tasks, id: "wide" })).toBe(createHash("sha256").update(expected).digest("hex"));
  });
});
