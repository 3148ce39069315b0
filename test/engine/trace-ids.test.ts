import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { attemptSpanIdOf, attemptTraceparent, runSpanIdOf, traceIdOf, tracingEnabled } from "../../src/engine/tracing/trace-ids.ts";

describe("trace ids derived from the run", () => {
  it("are the same for the same run, task and try, whoever derives them, and differ otherwise", () => {
    expect(traceIdOf("sales@2026-09-01")).toBe(traceIdOf("sales@2026-09-01"));
    expect(traceIdOf("sales@2026-09-01")).toMatch(/^[0-9a-f]{32}$/);
    expect(traceIdOf("sales@2026-09-01")).not.toBe(traceIdOf("sales@2026-09-02"));
    expect(runSpanIdOf("sales@2026-09-01")).toMatch(/^[0-9a-f]{16}$/);
    const attempts = [attemptSpanIdOf("sales@2026-09-01", "load", 1), attemptSpanIdOf("sales@2026-09-01", "load", 2), attemptSpanIdOf("sales@2026-09-01", "check", 1)];
    expect(new Set([...attempts, runSpanIdOf("sales@2026-09-01")]).size).toBe(4);
    for (const id of attempts) expect(id).toMatch(/^[0-9a-f]{16}$/);
  });

  it("take the trace id from sha256 of the run id, and never the all-zeros invalid id", () => {
    expect(traceIdOf("r")).toBe(createHash("sha256").update("trace\0r").digest("hex").slice(0, 32));
    for (let i = 0; i < 200; i++) {
      expect(traceIdOf(`r${i}`)).not.toMatch(/^0+$/);
      expect(attemptSpanIdOf(`r${i}`, "t", i)).not.toMatch(/^0+$/);
    }
  });

  it("format the attempt's W3C traceparent: version 00, trace, attempt span, sampled", () => {
    expect(attemptTraceparent("sales@2026-09-01", "load", 2)).toBe(`00-${traceIdOf("sales@2026-09-01")}-${attemptSpanIdOf("sales@2026-09-01", "load", 2)}-01`);
  });

  it("are on only when an OTLP endpoint is named", () => {
    expect(tracingEnabled({})).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: "" })).toBe(false);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" })).toBe(true);
    expect(tracingEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:4318/v1/traces" })).toBe(true);
  });
});
