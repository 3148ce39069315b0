import { describe, expect, it } from "vitest";
import { unhandledKind } from "../../../src/core/pipeline/kind.ts";
import type { TaskDefinition } from "../../../src/core/pipeline/types.ts";

describe("unhandledKind", () => {
  it("makes a switch that misses a kind a compile error (tsc checks this file), and throws if reached anyway", () => {
    const label = (task: TaskDefinition): string => {
      switch (task.kind) {
        case "function":
        case "command":
        case "sql":
          return task.kind;
        // @ts-expect-error the sensor kind is not handled, so `task` is not `never` here
        default: return unhandledKind(task);
      }
    };
    expect(label({ kind: "sql" } as TaskDefinition)).toBe("sql");
    expect(() => label({ kind: "sensor" } as TaskDefinition)).toThrow('idem does not handle a task of kind "sensor"');
  });
});
