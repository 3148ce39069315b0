import { describe, expect, it } from "vitest";
import { pipeline } from "../../../src/core/pipeline/define.ts";
import { daily } from "../../../src/core/time/timetable.ts";

/**
 * Graph versions of existing projects must not change when the definition's code is reshaped:
 * a changed version makes every project's next run a new graph. These hashes were taken before
 * task definitions became one type per kind, and pin the JSON of every kind and every option.
 */
describe("the version of a pipeline with every kind of task", () => {
  const every = () =>
    pipeline("every_kind", { schedule: daily({ at: "02:00", timezone: "Europe/London" }), defaults: { retries: 1 }, promises: [{ dataset: "shop.orders", deadline: "D+1 06:00" }] }, {
      load: { run: () => ({ rows: 1 }), retries: 3, timeout: "5m", pool: "db", slots: 2, produces: ["shop.raw"], description: "loads" },
      export: { after: ["load"], command: ["sh", "-c", "true"], cwd: "/tmp", env: { B: "2", A: "1" }, dataErrorExitCodes: [65, 3], killGrace: "10s", restate: false },
      export_isolated: { after: ["load"], command: (ctx) => ["echo", ctx.businessDate], env: { inherit: false, pass: ["PATH"], set: { X: "y" } } },
      wait_file: { sensor: () => true, pokeInterval: "30s", pokeBackoff: true, maxPokeInterval: "10m", sensorTimeout: "2h", softFail: true, mode: "poke" },
      sql_text: { after: ["wait_file"], sql: "INSERT INTO t SELECT $business_date", connection: "warehouse", publishes: "shop.orders" },
      sql_file: { after: ["sql_text"], sql: { file: "/somewhere/sql/check_day.sql" }, connection: "warehouse", check: true, triggerRule: "all_done" },
    });

  it("keeps the hash it had before", () => {
    expect(every().version).toBe("ef0ff4879b88d1c8");
  });

  it("keeps the definition it had before, task by task", () => {
    expect(JSON.stringify(every().definition.tasks)).toBe('[{"id":"load","kind":"function","upstream":[],"policy":{"retries":3,"retryDelayMs":30000,"backoff":"fixed","maxRetryDelayMs":3600000,"jitter":0,"timeoutMs":300000,"triggerRule":"all_success","pool":"db","slots":2,"priority":0},"killGraceMs":5000,"produces":["shop.raw"]},{"id":"export","kind":"command","upstream":["load"],"policy":{"retries":1,"retryDelayMs":30000,"backoff":"fixed","maxRetryDelayMs":3600000,"jitter":0,"timeoutMs":null,"triggerRule":"all_success","pool":null,"slots":1,"priority":0},"command":["sh","-c","true"],"cwd":"/tmp","env":["A","B"],"dataErrorExitCodes":[65,3],"killGraceMs":10000,"restate":false},{"id":"export_isolated","kind":"command","upstream":["load"],"policy":{"retries":1,"retryDelayMs":30000,"backoff":"fixed","maxRetryDelayMs":3600000,"jitter":0,"timeoutMs":null,"triggerRule":"all_success","pool":null,"slots":1,"priority":0},"command":"<function>","env":["X"],"envPolicy":{"inherit":false,"pass":["PATH"]},"dataErrorExitCodes":[65],"killGraceMs":5000},{"id":"wait_file","kind":"sensor","upstream":[],"policy":{"retries":1,"retryDelayMs":30000,"backoff":"fixed","maxRetryDelayMs":3600000,"jitter":0,"timeoutMs":null,"triggerRule":"all_success","pool":null,"slots":1,"priority":0},"killGraceMs":5000,"sensorPolicy":{"pokeIntervalMs":30000,"pokeBackoff":true,"maxPokeIntervalMs":600000,"timeoutMs":7200000,"softFail":true,"mode":"poke"}},{"id":"sql_text","kind":"sql","upstream":["wait_file"],"policy":{"retries":1,"retryDelayMs":30000,"backoff":"fixed","maxRetryDelayMs":3600000,"jitter":0,"timeoutMs":null,"triggerRule":"all_success","pool":null,"slots":1,"priority":0},"killGraceMs":5000,"produces":["shop.orders"],"publishes":"shop.orders","sql":"INSERT INTO t SELECT $business_date","connection":"warehouse"},{"id":"sql_file","kind":"sql","upstream":["sql_text"],"policy":{"retries":1,"retryDelayMs":30000,"backoff":"fixed","maxRetryDelayMs":3600000,"jitter":0,"timeoutMs":null,"triggerRule":"all_done","pool":null,"slots":1,"priority":0},"killGraceMs":5000,"sql":{"file":"check_day.sql"},"connection":"warehouse","check":true}]');
  });
});
