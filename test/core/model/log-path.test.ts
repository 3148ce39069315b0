import { describe, expect, it } from "vitest";
import { attemptLogPath } from "../../../src/core/model/log-path.ts";

describe("an attempt's log path", () => {
  it("is <logDir>/<run>/<task>/try-<n>.log", () => {
    expect(attemptLogPath("/state/logs", "orders@2026-09-01", "load", 3)).toBe("/state/logs/orders@2026-09-01/load/try-3.log");
  });

  it("makes the run id path-safe: no separator, no parent folder, no space", () => {
    const path = attemptLogPath("/state/logs", "../etc/x y:z@2026-09-01T06:00", "t", 1);
    expect(path).toBe("/state/logs/.._etc_x_y_z@2026-09-01T06_00/t/try-1.log");
    expect(path.startsWith("/state/logs/")).toBe(true);
  });
});
