import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { addDays } from "../../src/core/time/dates.ts";
import { daily } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { call, testApp } from "../support/http.ts";

const FIRST = "2026-09-01";
const date = (n: number) => addDays(FIRST, n - 1);
/** When day n's interval fires: 02:00 UTC the next day. */
const firesAt = (n: number) => Date.parse(`${date(n + 1)}T02:00:00Z`);

let h: ScheduleHarness;
afterEach(async () => h?.close());

async function open(pipelines: Parameters<typeof ScheduleHarness.open>[0], at: string) {
  h = await ScheduleHarness.open(pipelines, at);
  return (await h.engine.createToken({ name: "victor", role: "viewer", actor: "root" })).secret;
}

describe("restatements through the API", () => {
  it("shows a restated run's count, time and refusal note, and its restatement history newest first", async () => {
    const orders = pipeline("orders", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: FIRST, restate: { last: 2 } }, { load: { run: () => ({ rows: 1 }) } });
    const viewer = await open([orders], `${FIRST}T00:00:00Z`);
    for (let n = 1; n <= 4; n++) await h.at(firesAt(n));
    const app = testApp(h.engine);

    const runs = await call(app, "/api/v1/pipelines/orders/runs", { token: viewer });
    const byDate = Object.fromEntries(runs.body.items.map((r: { businessDate: string }) => [r.businessDate, r]));
    // Day 2 was restated after day 3 ran and again after day 4: the window of 2 days before each.
    expect(byDate[date(2)]).toMatchObject({ trigger: "restate", restateCount: 2, restateNote: null });
    expect(byDate[date(2)].restatedAt).toBe(new Date(firesAt(4)).toISOString());
    expect(byDate[date(4)]).toMatchObject({ trigger: "schedule", restateCount: 0, restatedAt: null });
    const run = await call(app, `/api/v1/runs/orders@${date(2)}`, { token: viewer });
    expect(run.body.run).toMatchObject({ restateCount: 2 });

    const history = await call(app, `/api/v1/runs/orders@${date(2)}/audit?action=restate,restate-refused`, { token: viewer });
    expect(history.status).toBe(200);
    expect(history.body.items.map((e: { action: string; at: string; details: { after: string; restatement: number } }) => [e.action, e.at, e.details.after, e.details.restatement])).toEqual([
      ["restate", new Date(firesAt(4)).toISOString(), date(4), 2],
      ["restate", new Date(firesAt(3)).toISOString(), date(3), 1],
    ]);
    expect((await call(app, `/api/v1/runs/orders@${date(2)}/audit?limit=1`, { token: viewer })).body.items).toHaveLength(1);
    const unknown = await call(app, "/api/v1/runs/orders@2030-01-01/audit", { token: viewer });
    expect([unknown.status, unknown.body.field]).toEqual([404, "runId"]);
  });
});

describe("alerts sent, through the API", () => {
  it("pages the alerts of incidents with notifier, kind, state, tries and last error, filtered; 422 for a bad filter", async () => {
    const sales = pipeline("sales", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: FIRST }, { load: { run: () => ({ rows: 1 }) } });
    const viewer = await open([sales], "2026-09-03T03:00:00Z");
    const incident = (key: string, pipelineId: string, at: number) => ({
      key, kind: "did_not_run" as const, dataset: null, pipelineId, businessDate: date(1), runId: null, message: `${key}: did not run`, notify: ["hook", "log"], at,
    });
    const t0 = h.clock.now();
    await h.store.openIncident(incident("dnr:sales:1", "sales", t0));
    await h.store.openIncident(incident("dnr:other:1", "other", t0 + 1));
    await h.store.resolveIncident("dnr:sales:1", t0 + 2, "ran");
    const due = await h.store.dueAlerts(t0 + 2, 10);
    const hook = due.find((a) => a.incidentKey === "dnr:sales:1" && a.event === "open" && a.notifier === "hook")!;
    const log = due.find((a) => a.incidentKey === "dnr:sales:1" && a.event === "open" && a.notifier === "log")!;
    await h.store.recordAlertDelivery(hook.id, { at: t0 + 5, error: "webhook hook: HTTP 503", nextAttemptAt: t0 + 30_000 });
    await h.store.recordAlertDelivery(log.id, { at: t0 + 6 });
    const app = testApp(h.engine);

    const all = await call(app, "/api/v1/alerts", { token: viewer });
    expect(all.status).toBe(200);
    expect(all.body.items).toHaveLength(6);
    const page1 = await call(app, "/api/v1/alerts?pipeline=sales&limit=3", { token: viewer });
    const page2 = await call(app, `/api/v1/alerts?pipeline=sales&limit=3&cursor=${page1.body.next_cursor}`, { token: viewer });
    expect([...page1.body.items, ...page2.body.items].map((a: { event: string; notifier: string; state: string }) => `${a.event} ${a.notifier} ${a.state}`)).toEqual([
      "resolve log queued", "resolve hook queued", "open log sent", "open hook failed",
    ]);
    expect(page2.body.next_cursor).toBeNull();
    expect(page2.body.items.at(-1)).toMatchObject({
      incidentKey: "dnr:sales:1", incidentKind: "did_not_run", pipelineId: "sales", businessDate: date(1), tries: 1, lastError: "webhook hook: HTTP 503",
      queuedAt: new Date(t0).toISOString(), nextAttemptAt: new Date(t0 + 30_000).toISOString(), deliveredAt: null,
    });
    expect((await call(app, "/api/v1/alerts?state=sent", { token: viewer })).body.items.map((a: { notifier: string; deliveredAt: string }) => [a.notifier, a.deliveredAt])).toEqual([["log", new Date(t0 + 6).toISOString()]]);
    expect((await call(app, "/api/v1/alerts?incident=dnr:other:1", { token: viewer })).body.items.map((a: { state: string }) => a.state)).toEqual(["queued", "queued"]);

    const badState = await call(app, "/api/v1/alerts?state=lost", { token: viewer });
    expect([badState.status, badState.body.field, badState.type]).toEqual([422, "state", "application/problem+json"]);
    const badPipeline = await call(app, "/api/v1/alerts?pipeline=nope", { token: viewer });
    expect([badPipeline.status, badPipeline.body.field]).toEqual([404, "pipelineId"]);
    expect((await call(app, "/api/v1/alerts?cursor=garbage", { token: viewer })).body.field).toBe("cursor");
    expect((await call(app, "/api/v1/alerts")).status).toBe(401);
    const doc = (await call(app, "/api/v1/openapi.json")).body;
    expect(doc.paths["/alerts"].get.parameters.map((p: { name: string }) => p.name)).toEqual(["pipeline", "incident", "state", "limit", "cursor"]);
    expect(doc.paths["/runs/{runId}/audit"].get.parameters.map((p: { name: string }) => p.name)).toEqual(["runId", "action", "limit"]);
  });
});

describe("GET /health", () => {
  it("needs no token, says who runs the checker and how fresh its last pass is, and answers 503 when nobody checks", async () => {
    const sales = pipeline("sales", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: FIRST }, { load: { run: () => ({ rows: 1 }) } });
    await open([sales], "2026-09-03T03:00:00Z");
    await h.at("2026-09-03T03:00:00Z");
    const app = testApp(h.engine);

    const never = await call(app, "/health");
    expect(never.status).toBe(503);
    expect(never.body).toMatchObject({ status: "none", healthy: false, checker: { status: "none", holder: null, lastPassAgeMs: null } });
    expect(never.body.message).toMatch(/no watchdog has ever run/);

    await h.engine.watchdog("serve").pass();
    await h.at(h.clock.now() + 5_000);
    const ok = await call(app, "/health");
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: "ok", healthy: true, checker: { status: "ok", lastPassAgeMs: 5_000 }, scheduler: { live: true, holder: "scheduler-1" }, brokenFiles: [] });
    expect(ok.body.checker.holder).toMatch(/^serve /);
    expect(ok.headers.get("cache-control")).toBe("no-store");

    h.clock.set(h.clock.now() + 120_000); // no pass for two minutes: the checker is stale
    const stale = await call(app, "/health");
    expect([stale.status, stale.body.status, stale.body.healthy]).toEqual([503, "stale", false]);
    const api = await call(app, "/api/v1/health");
    expect(api.status).toBe(401);
    expect((await call(app, "/health", { headers: { host: "rebind.evil.example" } })).status).toBe(403);
  });
});
