import { describe, expect, it } from "vitest";
import { externalJob, type ExternalAdapterSpec } from "../../src/engine/external-jobs/adapter.ts";
import { jsonPath } from "../../src/engine/external-jobs/http.ts";

describe("external job adapters", () => {
  it("makes the job of each kind, and no other", () => {
    const specs: ExternalAdapterSpec[] = [
      { kind: "slurm", script: "#!/bin/sh\ntrue\n" },
      { kind: "http", submit: { url: "http://127.0.0.1/s", body: () => ({}), handle: "id" }, status: { url: "http://127.0.0.1/g/{handle}", state: "state", running: ["R"], succeeded: ["S"] }, cancel: { url: "http://127.0.0.1/c/{handle}" } },
      { kind: "spark-submit", master: "spark://127.0.0.1:7077", application: ["app.jar"] },
    ];
    expect(specs.map((s) => externalJob(s).adapter)).toEqual(["slurm", "http", "spark-submit"]);
    expect(() => externalJob({ kind: "yarn" } as never)).toThrow('idem has no external job adapter of kind "yarn"');
  });

  it("reads dotted paths through objects and lists", () => {
    expect(jsonPath({ state: { result_state: "SUCCESS" } }, "state.result_state")).toBe("SUCCESS");
    expect(jsonPath({ runs: [{ id: 7 }] }, "runs.0.id")).toBe(7);
    expect(jsonPath({ state: null }, "state.result_state")).toBeUndefined();
  });
});
