import { describe, expect, it } from "vitest";
import { DefinitionError, DefinitionErrors } from "../../../src/core/model/errors.ts";
import { nearestName } from "../../../src/core/model/nearest-name.ts";
import { pipeline } from "../../../src/core/pipeline/define.ts";
import { withDefinitionSink } from "../../../src/core/pipeline/definition-sink.ts";
import { isPipeline } from "../../../src/core/pipeline/define.ts";

const noop = () => {};

function problemsOf(fn: () => unknown): { message: string; key: readonly string[] | undefined }[] {
  try {
    fn();
  } catch (error) {
    const all = error instanceof DefinitionErrors ? error.problems : error instanceof DefinitionError ? [error] : null;
    if (!all) throw error;
    return all.map((p) => ({ message: p.message, key: p.place.key }));
  }
  throw new Error("expected a definition error");
}

describe("a key in the wrong place", () => {
  it("names a task option that does not exist, with the one it most likely meant", () => {
    expect(problemsOf(() => pipeline("etl", {}, { load: { run: noop, retry: 3 } as never }))).toEqual([
      { message: 'pipeline etl, task load: unknown task option `retry` (did you mean "retries"?)', key: ["tasks", "load", "retry"] },
    ]);
  });

  it("names an option of another kind of task", () => {
    expect(problemsOf(() => pipeline("etl", {}, { load: { run: noop, sensorTimeout: "1h" } as never }))).toEqual([
      { message: "pipeline etl, task load: `sensorTimeout` is an option of sensor tasks, and this is a function task (`run`)", key: ["tasks", "load", "sensorTimeout"] },
    ]);
    expect(problemsOf(() => pipeline("etl", {}, { wait: { sensor: () => true, connection: "wh" } as never }))[0]!.message).toBe(
      "pipeline etl, task wait: `connection` is an option of sql tasks, and this is a sensor task (`sensor`)",
    );
  });

  it("names a task option written among the pipeline's options", () => {
    expect(problemsOf(() => pipeline("etl", { retries: 3 } as never, { load: { run: noop } }))).toEqual([
      { message: "pipeline etl: `retries` is a task option, not a pipeline option: set it on each task or in `defaults`", key: ["options", "retries"] },
    ]);
  });

  it("names an unknown pipeline option and a key of defaults that is no task policy", () => {
    expect(problemsOf(() => pipeline("etl", { shedule: "0 2 * * *", defaults: { retry: 1, after: [] } } as never, { load: { run: noop } }))).toEqual([
      { message: 'pipeline etl: unknown pipeline option `shedule` (did you mean "schedule"?)', key: ["options", "shedule"] },
      { message: 'pipeline etl: `defaults` takes task policies only (retries, retryDelay, backoff, maxRetryDelay, jitter, timeout, triggerRule, pool, slots, priority), not `retry` (did you mean "retries"?)', key: ["options", "defaults", "retry"] },
      { message: "pipeline etl: `defaults` takes task policies only (retries, retryDelay, backoff, maxRetryDelay, jitter, timeout, triggerRule, pool, slots, priority), not `after`", key: ["options", "defaults", "after"] },
    ]);
  });

  it("reports every problem of a task, each about its key", () => {
    expect(problemsOf(() => pipeline("etl", {}, { load: { run: noop, retries: -1, timeout: "soon", slots: 0, pool: "a b" } }))).toEqual([
      { message: "pipeline etl, task load: retries must be a whole number >= 0, not -1", key: ["tasks", "load", "retries"] },
      { message: "pipeline etl, task load: invalid pool name \"a b\"", key: ["tasks", "load", "pool"] },
      { message: "pipeline etl, task load: slots must be a whole number >= 1, not 0", key: ["tasks", "load", "slots"] },
      { message: expect.stringMatching(/^pipeline etl, task load: bad timeout "soon"/), key: ["tasks", "load", "timeout"] },
    ]);
  });

  it("names an unknown key of a promise, placed on that promise", () => {
    expect(problemsOf(() => pipeline("shop", { promises: [{ dataset: "orders", deadline: "D+1 06:00", dealine: "x" } as never] }, { a: { run: noop, publishes: "orders" } }))).toEqual([
      { message: 'pipeline shop: promise orders: unknown key "dealine" (did you mean "deadline"?)', key: ["options", "promises", "0"] },
      { message: 'pipeline shop, task a: publishes "orders" but the pipeline has no promise for it', key: ["tasks", "a", "publishes"] },
    ]);
  });

  it("places an unknown upstream on the task's `after`", () => {
    expect(problemsOf(() => pipeline("etl", {}, { load: { run: noop, after: ["nope" as never] } }))[0]!.key).toEqual(["tasks", "load", "after"]);
  });
});

describe("while a loader collects problems", () => {
  it("goes on past a pipeline with problems and hands every pipeline's problems to the sink", async () => {
    const seen: string[] = [];
    const defined = await withDefinitionSink((problems) => seen.push(...problems.map((p) => p.message)), async () => [
      pipeline("one", { retries: 1 } as never, { a: { run: noop } }),
      pipeline("two", {}, { b: { run: noop, retry: 1 } as never }),
      pipeline("three", {}, { c: { run: noop } }),
    ]);
    expect(seen).toEqual([
      "pipeline one: `retries` is a task option, not a pipeline option: set it on each task or in `defaults`",
      'pipeline two, task b: unknown task option `retry` (did you mean "retries"?)',
    ]);
    expect(defined.map(isPipeline)).toEqual([false, false, true]);
    // and once the loader is done, a definition throws again
    expect(() => pipeline("four", { retries: 1 } as never, { a: { run: noop } })).toThrow(DefinitionError);
  });
});

describe("did you mean", () => {
  it("finds a near name, and none when nothing is near", () => {
    expect(nearestName("retry", ["retries", "retryDelay", "priority"])).toBe("retries");
    expect(nearestName("trigger_rule", ["triggerRule"])).toBe("triggerRule");
    expect(nearestName("tiemout", ["timeout", "triggerRule"])).toBe("timeout");
    expect(nearestName("colour", ["retries", "pool"])).toBeNull();
  });
});

describe("names a definition must share with the project and its runs", () => {
  it("a pool the config does not declare is a problem about the task's pool", async () => {
    const { undeclaredPoolProblems } = await import("../../../src/core/pipeline/pools.ts");
    const p = pipeline("etl", { defaults: { pool: "warehouse" } }, { a: { run: noop }, b: { run: noop, pool: "api" }, c: { run: noop, pool: null } });
    expect(undeclaredPoolProblems(p, ["warehouse"]).map((e) => [e.message, e.place.key])).toEqual([
      ['pipeline etl, task b: pool "api" is not declared in the config (pools: warehouse)', ["tasks", "b", "pool"]],
    ]);
    expect(undeclaredPoolProblems(p, []).map((e) => e.message)).toEqual([
      'pipeline etl, task a: pool "warehouse" is not declared in the config (it declares none)',
      'pipeline etl, task b: pool "api" is not declared in the config (it declares none)',
    ]);
  });

  it("a run may set only the params its pipeline declares", async () => {
    const { assertDeclaredParams } = await import("../../../src/core/pipeline/params.ts");
    const p = pipeline("etl", { params: { region: "eu" } }, { a: { run: noop } });
    expect(() => assertDeclaredParams(p, { region: "uk" })).not.toThrow();
    expect(() => assertDeclaredParams(p, undefined)).not.toThrow();
    expect(() => assertDeclaredParams(p, { foo: "bar" })).toThrow('pipeline etl: param "foo" is not declared by the pipeline (declared: region)');
  });
});
