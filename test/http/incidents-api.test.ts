import { afterEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { call, testApp } from "../support/http.ts";

let h: ScheduleHarness;
afterEach(async () => h?.close());

const KEY = "sla_missed:orders_daily:2026-09-01";

async function open() {
  const sales = pipeline("sales", { schedule: daily({ at: "02:00", timezone: "UTC" }), start: "2026-09-01" }, { load: { run: () => ({ rows: 1 }) } });
  h = await ScheduleHarness.open([sales], "2026-09-03T03:00:00Z");
  const operator = (await h.engine.createToken({ name: "alice", role: "operator", actor: "root" })).secret;
  const viewer = (await h.engine.createToken({ name: "victor", role: "viewer", actor: "root" })).secret;
  await h.store.openIncident({
    key: KEY, kind: "sla_missed", dataset: "orders_daily", pipelineId: "sales", businessDate: "2026-09-01", runId: null,
    message: "SLA missed: orders_daily for 2026-09-01 is not published", notify: ["hook", "log"], at: h.clock.now(),
  });
  return { app: testApp(h.engine), operator, viewer };
}

describe("an incident's lifecycle through the API", () => {
  it("an operator acknowledges, snoozes and resolves with a reason; each answer carries its audit entry; the resolution is queued for the notifiers told of the opening", async () => {
    const { app, operator, viewer } = await open();
    const path = `/api/v1/incidents/${encodeURIComponent(KEY)}`;
    expect((await call(app, path, { token: viewer })).body).toMatchObject({ key: KEY, state: "open", acknowledgement: null, resolvedBy: null });

    const ack = await call(app, `${path}/acknowledge`, { token: operator, body: { reason: "upstream late" } });
    expect(ack.status).toBe(200);
    expect(ack.body.incident).toMatchObject({ state: "acknowledged", acknowledgement: { by: "alice", reason: "upstream late", until: null, at: new Date(h.clock.now()).toISOString() } });
    expect(ack.body.audit).toMatchObject({ actor: "alice", action: "incident-acknowledge", reason: "upstream late", pipelineId: "sales", details: { incident: KEY } });

    const snoozed = await call(app, `${path}/acknowledge`, { token: operator, body: { reason: "vendor says noon", for: "2h" } });
    expect(snoozed.body.incident.acknowledgement.until).toBe(new Date(h.clock.now() + 7_200_000).toISOString());
    expect(snoozed.body.audit.action).toBe("incident-snooze");
    h.clock.advance(7_200_000);
    expect((await call(app, path, { token: viewer })).body.state).toBe("open"); // the snooze ended
    const until = new Date(h.clock.now() + 60_000).toISOString();
    expect((await call(app, `${path}/acknowledge`, { token: operator, body: { reason: "a minute more", until } })).body.incident.acknowledgement.until).toBe(until);

    const resolved = await call(app, `${path}/resolve`, { token: operator, body: { reason: "loaded by hand" } });
    expect(resolved.body.incident).toMatchObject({ state: "resolved", resolvedBy: "alice", resolution: "loaded by hand" });
    const alerts = await call(app, `/api/v1/alerts?incident=${encodeURIComponent(KEY)}`, { token: viewer });
    expect(alerts.body.items.map((a: { event: string; notifier: string }) => `${a.event} ${a.notifier}`).sort()).toEqual(["open hook", "open log", "resolve hook", "resolve log"]);
    const audit = await call(app, "/api/v1/audit?actor=alice", { token: viewer });
    expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(["incident-resolve", "incident-snooze", "incident-snooze", "incident-acknowledge"]);
  });

  it("answers problem documents: 403 for a viewer, 422 naming the field, 404 for an unknown key, 409 for a resolved incident", async () => {
    const { app, operator, viewer } = await open();
    const path = `/api/v1/incidents/${encodeURIComponent(KEY)}`;
    const problem = async (url: string, token: string, body: unknown) => {
      const r = await call(app, url, { token, body });
      return [r.status, r.type.split(";")[0], r.body.field ?? null, r.body.detail];
    };
    expect((await problem(`${path}/resolve`, viewer, { reason: "x" }))[0]).toBe(403);
    expect(await problem(`${path}/resolve`, operator, { reason: " " })).toEqual([422, "application/problem+json", "reason", "body reason: give a reason: every action is audited"]);
    expect(await problem(`${path}/acknowledge`, operator, { reason: "r", for: "soon" })).toEqual([422, "application/problem+json", "for", `bad duration "soon" (expected e.g. 500ms, 30s, 5m, 1h30m, 2d)`]);
    expect((await problem(`${path}/acknowledge`, operator, { reason: "r", until: "tomorrow" })).slice(0, 3)).toEqual([422, "application/problem+json", "until"]);
    expect(await problem(`${path}/acknowledge`, operator, { reason: "r", for: "0s" })).toEqual([422, "application/problem+json", "for", `for must be a positive duration to snooze incident ${KEY}`]);
    expect((await problem(`${path}/acknowledge`, operator, { reason: "r", for: "1h", until: "2030-01-01T00:00:00Z" })).slice(0, 3)).toEqual([422, "application/problem+json", "until"]);
    expect(await problem(`${path}/acknowledge`, operator, { reason: "r", until: "2020-01-01T00:00:00Z" })).toEqual([422, "application/problem+json", "until", `until must be in the future to snooze incident ${KEY}`]);
    expect(await problem("/api/v1/incidents/nope%3A1/resolve", operator, { reason: "r" })).toEqual([404, "application/problem+json", "key", "unknown incident nope:1"]);
    await call(app, `${path}/resolve`, { token: operator, body: { reason: "done" } });
    expect(await problem(`${path}/acknowledge`, operator, { reason: "r" })).toEqual([409, "application/problem+json", null, `incident ${KEY} was resolved by alice; there is nothing to acknowledge`]);

    const doc = (await call(app, "/api/v1/openapi.json")).body;
    const body = doc.paths["/incidents/{key}/acknowledge"].post.requestBody.content["application/json"].schema;
    expect(Object.keys(body.properties)).toEqual(["reason", "until", "for"]);
    expect(body.required).toEqual(["reason"]);
    expect(doc.paths["/incidents/{key}/resolve"].post).toBeDefined();
  });
});
