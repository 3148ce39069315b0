import { describe, expect, it } from "vitest";
import { locateKey } from "../../src/engine/project/locate-key.ts";

const SOURCE = `import { pipeline } from "idem";
// pipeline("decoy", {}, { a: { retry: 1 } }) in a comment
const pattern = /[}{"'\`]/g;
const shared = {
  retries: 2,
};
export const first = pipeline("first", { schedule: \`0 \${"}"} * * *\`, defaults: shared }, {
  "quoted-key": { run: () => "{", retry: 3 },
  async method(ctx) { return { retry: 1 }; },
  load: {
    run: () => pattern.test("}"),
    /* a block comment with { braces */
    pool: "warehouse",
  },
});
const tasks = [
  { id: "a", run: () => {} },
  {
    id: "b",
    sensorTimeout: "1h",
  },
];
export const second = pipeline("second", {}, tasks);
`;

describe("locating a key of a pipeline definition in its source text", () => {
  it("follows the path through literals, past strings, templates, comments and regular expressions", () => {
    const byId = (pipelineId: string, ...key: string[]) => locateKey(SOURCE, key, { pipelineId });
    expect(byId("first", "tasks", "load", "pool")).toBe(13);
    expect(byId("first", "tasks", "quoted-key", "retry")).toBe(8);
    expect(byId("first", "tasks", "method")).toBe(9);
    expect(byId("first", "options", "defaults", "retries")).toBe(5);
  });

  it("finds a task of a list by its id, through a const of the same file", () => {
    expect(locateKey(SOURCE, ["tasks", "b", "sensorTimeout"], { pipelineId: "second" })).toBe(20);
  });

  it("stops at the deepest part it found, and takes the call the stack names over the id", () => {
    expect(locateKey(SOURCE, ["tasks", "load", "timeout"], { pipelineId: "first" })).toBe(10);
    expect(locateKey(SOURCE, ["options", "retries"], { pipelineId: "first" })).toBe(7);
    expect(locateKey(SOURCE, ["tasks", "b", "sensorTimeout"], { call: { line: 23, column: 23 } })).toBe(20);
    expect(locateKey(SOURCE, ["tasks", "a"], { pipelineId: "nowhere" })).toBeUndefined();
  });
});
