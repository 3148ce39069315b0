import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { call, testApp } from "../support/http.ts";

let h: ScheduleHarness;
afterEach(async () => {
  await h?.close();
});

describe("GET /metrics", () => {
  it("answers Prometheus' text format to someone known: the local user on loopback, or a viewer token", async () => {
    const sales = pipeline("sales", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01" }, { load: { run: () => ({ rows: 1 }) } });
    h = await ScheduleHarness.open([sales], "2026-09-01T00:00:00Z");
    await h.at("2026-09-03T03:00:00Z");

    const local = await call(testApp(h.engine, "alice"), "/metrics");
    expect(local.status).toBe(200);
    expect(local.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(local.headers.get("cache-control")).toBe("no-store");
    expect(local.body.split("\n")).toContain('idem_runs_recent{pipeline="sales",state="success"} 2');

    const { secret } = await h.engine.createToken({ name: "prometheus", role: "viewer", actor: "alice" });
    const app = testApp(h.engine);
    const anonymous = await call(app, "/metrics");
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toMatchObject({ field: "Authorization" });
    const viewer = await call(app, "/metrics", { token: secret });
    expect(viewer.status).toBe(200);
    expect(viewer.body).toMatch(/^idem_store_up 1$/m);
  });
});
