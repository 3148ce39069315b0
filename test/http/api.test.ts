import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { pipeline } from "../../src/core/pipeline/define.ts";
import { daily } from "../../src/core/time/index.ts";
import { ScheduleHarness } from "../support/scheduling.ts";
import { csrfTokenOf } from "../../src/http/env.ts";
import { call, testApp } from "../support/http.ts";

function salesPipeline() {
  return pipeline(
    "sales",
    { schedule: daily({ at: "02:00", timezone: "Europe/London" }), start: "2026-09-01" },
    {
      load: {
        run: (ctx) => {
          ctx.log.info(`loading ${ctx.businessDate}`);
          if (ctx.businessDate === "2026-09-03") throw new Error("bad file for 2026-09-03");
          return { rows: 3 };
        },
      },
      report: { after: ["load"], run: () => {} },
    },
  );
}

let h: ScheduleHarness;
let operator: string;
let viewer: string;

beforeEach(async () => {
  h = await ScheduleHarness.open([salesPipeline()], "2026-09-06T03:00:00Z");
  await h.at("2026-09-06T03:00:00Z");
  operator = (await h.engine.createToken({ name: "alice", role: "operator", actor: "root" })).secret;
  viewer = (await h.engine.createToken({ name: "victor", role: "viewer", actor: "root" })).secret;
});
afterEach(async () => h?.close());

describe("the HTTP API: who may do what", () => {
  it("answers 401 with a problem document without a token, or with an unknown or revoked one", async () => {
    const app = testApp(h.engine);
    const none = await call(app, "/api/v1/pipelines");
    expect(none.status).toBe(401);
    expect(none.type).toContain("application/problem+json");
    expect(none.body).toMatchObject({ status: 401, field: "Authorization" });
    expect((await call(app, "/api/v1/pipelines", { token: "idem_wrong" })).status).toBe(401);
    await h.engine.revokeToken("victor", { actor: "root" });
    expect((await call(app, "/api/v1/pipelines", { token: viewer })).status).toBe(401);
    expect((await call(app, "/api/v1/pipelines", { token: operator })).status).toBe(200);
  });

  it("lets a viewer read and refuses its actions with 403; an operator's action needs a reason and returns its audit entry", async () => {
    const app = testApp(h.engine);
    const runs = await call(app, "/api/v1/pipelines/sales/runs", { token: viewer });
    expect(runs.status).toBe(200);
    expect(runs.body.items.map((r: { businessDate: string }) => r.businessDate)).toEqual(["2026-09-05", "2026-09-04", "2026-09-03", "2026-09-02", "2026-09-01"]);
    expect(runs.body.items[2]).toMatchObject({ state: "failed", runId: "sales@2026-09-03", intervalStart: "2026-09-02T23:00:00.000Z" });

    const refused = await call(app, "/api/v1/runs/sales@2026-09-03/tasks/load/clear", { token: viewer, body: { reason: "file fixed" } });
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain("victor is a viewer");

    const noReason = await call(app, "/api/v1/runs/sales@2026-09-03/tasks/load/clear", { token: operator, body: { downstream: true } });
    expect(noReason.status).toBe(422);
    expect(noReason.body).toMatchObject({ field: "reason" });
    const blank = await call(app, "/api/v1/runs/sales@2026-09-03/tasks/load/clear", { token: operator, body: { reason: "   " } });
    expect(blank.body.field).toBe("reason");

    const cleared = await call(app, "/api/v1/runs/sales@2026-09-03/tasks/load/clear", { token: operator, body: { reason: "file fixed", downstream: true } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.audit).toMatchObject({ actor: "alice", action: "clear", reason: "file fixed", runId: "sales@2026-09-03", taskId: "load" });
    expect(cleared.body.tasks.map((t: { state: string }) => t.state)).toEqual(["queued", "scheduled"]);
    const audit = await call(app, "/api/v1/audit?actor=alice", { token: viewer });
    expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(["clear"]);
  });

  it("acts for the local OS user on loopback while no token exists, and says so", async () => {
    await h.engine.revokeToken("alice", { actor: "root" });
    await h.engine.revokeToken("victor", { actor: "root" });
    const app = testApp(h.engine, "ana");
    const me = await call(app, "/api/v1/me");
    expect(me.body).toEqual({ actor: "ana", role: "operator", mayAct: true, localUser: true, via: "local" });
    await h.engine.createToken({ name: "bo", role: "viewer", actor: "root" });
    expect((await call(app, "/api/v1/me")).status).toBe(401);
  });

  it("refuses a foreign Host header and cross-origin writes with 403", async () => {
    const app = testApp(h.engine);
    const rebound = await call(app, "/api/v1/pipelines", { token: operator, headers: { host: "evil.example:8080" } });
    expect(rebound.status).toBe(403);
    expect(rebound.body).toMatchObject({ field: "Host" });
    const crossOrigin = await call(app, "/api/v1/pipelines/sales/pause", { token: operator, body: { reason: "x" }, headers: { origin: "http://evil.example" } });
    expect(crossOrigin.status).toBe(403);
    expect(crossOrigin.body.field).toBe("Origin");
    const crossSite = await call(app, "/auth/session", {
      body: `token=${operator}`, headers: { "content-type": "application/x-www-form-urlencoded", "sec-fetch-site": "cross-site" },
    });
    expect(crossSite.status).toBe(403);
    expect((await h.engine.pipelineState("sales")).paused).toBe(false);
  });

  it("exchanges a token for an HttpOnly SameSite=Strict cookie, and refuses the cookie's writes without the CSRF token", async () => {
    const app = testApp(h.engine);
    // A page gets its CSRF token from the server (csrfTokenOf); here, a route shows it.
    app.get("/test/csrf", (c) => c.text(csrfTokenOf(c)));
    const anonymous = await call(app, "/api/v1/me");
    expect(anonymous.status).toBe(401);
    const login = await app.request("/auth/session", {
      method: "POST",
      headers: { host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080", "content-type": "application/json" },
      body: JSON.stringify({ token: operator }),
    });
    expect(login.status).toBe(204);
    const setCookie = login.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/^idem_session=/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    const cookie = setCookie.split(";")[0]!;
    const me = await call(app, "/api/v1/me", { headers: { cookie } });
    expect(me.body).toMatchObject({ actor: "alice", via: "cookie", mayAct: true });

    const withoutCsrf = await call(app, "/api/v1/pipelines/sales/pause", { body: { reason: "maintenance" }, headers: { cookie } });
    expect(withoutCsrf.status).toBe(403);
    expect(withoutCsrf.body.field).toBe("_csrf");
    const wrongCsrf = await call(app, "/api/v1/pipelines/sales/pause", { body: { reason: "maintenance" }, headers: { cookie, "x-csrf-token": "guess" } });
    expect(wrongCsrf.status).toBe(403);
    expect((await h.engine.pipelineState("sales")).paused).toBe(false);

    const csrf = (await call(app, "/test/csrf", { headers: { cookie } })).body as string;
    const paused = await call(app, "/api/v1/pipelines/sales/pause", { body: { reason: "maintenance" }, headers: { cookie, "x-csrf-token": csrf } });
    expect(paused.status).toBe(200);
    expect(paused.body.audit).toMatchObject({ actor: "alice", action: "pause", reason: "maintenance" });

    const badLogin = await call(app, "/auth/session", { body: { token: "idem_nope" }, headers: { origin: "http://127.0.0.1:8080" } });
    expect(badLogin.status).toBe(401);
  });
});

describe("the HTTP API: problems, pages, documents", () => {
  it("answers 404 for unknown ids and 422 for bad dates, naming the field", async () => {
    const app = testApp(h.engine);
    const cases: [string, number, string][] = [
      ["/api/v1/pipelines/nope", 404, "pipelineId"],
      ["/api/v1/pipelines/nope/runs", 404, "pipelineId"],
      ["/api/v1/runs/sales@2030-01-01", 404, "runId"],
      ["/api/v1/runs/sales@2026-09-01/tasks/nope", 404, "taskId"],
      ["/api/v1/runs/sales@2026-09-01/tasks/load/attempts/7/log", 404, "try"],
      ["/api/v1/backfills/bf_nope", 404, "backfillId"],
      ["/api/v1/pipelines/sales/runs?from=2026-13-01", 422, "from"],
      ["/api/v1/pipelines/sales/runs?to=yesterday", 422, "to"],
      ["/api/v1/pipelines/sales/runs?state=broken", 422, "state.0"],
      ["/api/v1/pipelines/sales/runs?limit=0", 422, "limit"],
      ["/api/v1/pipelines/sales/runs?cursor=garbage", 422, "cursor"],
      ["/api/v1/runs/sales@2026-09-01/tasks/load/attempts/first/log", 422, "try"],
    ];
    for (const [path, status, field] of cases) {
      const answer = await call(app, path, { token: viewer });
      expect([path, answer.status, answer.body.field, answer.type]).toEqual([path, status, field, "application/problem+json"]);
    }
    const badDate = await call(app, "/api/v1/pipelines/sales/runs", { token: operator, body: { date: "2026-02-30", reason: "x" } });
    expect([badDate.status, badDate.body.field]).toEqual([422, "date"]);
    // The clock is at 2026-09-06 03:00 London time: that day has not ended.
    const future = await call(app, "/api/v1/pipelines/sales/runs", { token: operator, body: { date: "2026-09-06", reason: "early" } });
    expect([future.status, future.type, future.body.field, future.body.detail]).toEqual([
      422, "application/problem+json", "date",
      "pipeline sales: 2026-09-06 has not ended: its interval ends at 2026-09-07 00:00 Europe/London; the newest date that can run now is 2026-09-05",
    ]);
    expect(await h.store.getRun("sales@2026-09-06")).toBeNull();
    const twice = await call(app, "/api/v1/pipelines/sales/runs", { token: operator, body: { date: "2026-09-01", reason: "again" } });
    expect(twice.status).toBe(409);
    const notJson = await call(app, "/api/v1/pipelines/sales/pause", { token: operator, body: "reason=x", headers: { "content-type": "text/plain" } });
    expect(notJson.status).toBe(415);
    expect((await call(app, "/api/v1/nothing", { token: viewer })).status).toBe(404);
  });

  it("pages runs by keyset, stable while runs are being added", async () => {
    const app = testApp(h.engine);
    const seen: string[] = [];
    let cursor: string | null = null;
    let added = 0;
    // The runs added below are for closed intervals: time has moved on, the scheduler has not ticked.
    h.clock.set("2026-09-20T03:00:00Z");
    do {
      const page: { body: { items: { businessDate: string }[]; next_cursor: string | null } } = await call(app, `/api/v1/pipelines/sales/runs?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { token: viewer });
      seen.push(...page.body.items.map((r) => r.businessDate));
      cursor = page.body.next_cursor;
      // Newer runs arrive between pages: the next page goes on where this one stopped.
      const date = `2026-09-${String(10 + added++).padStart(2, "0")}`;
      expect((await call(app, "/api/v1/pipelines/sales/runs", { token: operator, body: { date, reason: "load test" } })).status).toBe(201);
    } while (cursor);
    expect(seen).toEqual(["2026-09-05", "2026-09-04", "2026-09-03", "2026-09-02", "2026-09-01"]);
    const filtered = await call(app, "/api/v1/pipelines/sales/runs?state=failed,success&trigger=schedule&from=2026-09-02&to=2026-09-04", { token: viewer });
    expect(filtered.body.items.map((r: { businessDate: string; state: string }) => `${r.businessDate} ${r.state}`)).toEqual(["2026-09-04 success", "2026-09-03 failed", "2026-09-02 success"]);
    const manual = await call(app, "/api/v1/pipelines/sales/runs?trigger=manual&limit=50", { token: viewer });
    expect(manual.body.items).toHaveLength(added);
  });

  it("serves every resource the CLI has", async () => {
    const app = testApp(h.engine);
    const get = async (path: string) => {
      const answer = await call(app, path, { token: viewer });
      expect([path, answer.status]).toEqual([path, 200]);
      return answer.body;
    };
    expect((await get("/api/v1/pipelines")).items[0]).toMatchObject({ id: "sales", paused: false, schedule: { timezone: "Europe/London" }, nextRun: { businessDate: "2026-09-06" } });
    expect((await get("/api/v1/pipelines/sales")).tasks.map((t: { id: string }) => t.id)).toEqual(["load", "report"]);
    expect((await get("/api/v1/pipelines/sales/graph")).edges).toContainEqual({ from: "load", to: "report", type: "task" });
    expect((await get("/api/v1/pipelines/sales/schedule?count=2")).items.map((d: { businessDate: string }) => d.businessDate)).toEqual(["2026-09-06", "2026-09-07"]);
    expect((await get("/api/v1/pipelines/sales/expected?limit=3")).items.map((e: { status: string }) => e.status)).toEqual(["failed", "success", "success"]);
    const grid = await get("/api/v1/pipelines/sales/grid?from=2026-09-02&to=2026-09-03");
    expect(grid.runs.map((r: { businessDate: string }) => r.businessDate)).toEqual(["2026-09-03", "2026-09-02"]);
    expect(grid.tasks.map((t: { runId: string; taskId: string; state: string }) => `${t.runId} ${t.taskId} ${t.state}`).sort()).toEqual([
      "sales@2026-09-02 load success", "sales@2026-09-02 report success", "sales@2026-09-03 load failed", "sales@2026-09-03 report upstream_failed",
    ]);
    const run = await get("/api/v1/runs/sales@2026-09-03");
    expect(run.tasks.map((t: { taskId: string; state: string }) => `${t.taskId} ${t.state}`)).toEqual(["load failed", "report upstream_failed"]);
    expect((await get("/api/v1/runs/sales@2026-09-03/tasks/load")).attempts[0]).toMatchObject({ tryNumber: 1, errorMessage: "bad file for 2026-09-03" });
    expect((await get("/api/v1/runs/sales@2026-09-03/attempts")).items).toHaveLength(1);
    expect((await get("/api/v1/runs/sales@2026-09-03/tasks/report/why")).lines.join("\n")).toMatch(/upstream/);
    expect((await get("/api/v1/runs/sales@2026-09-20/why")).lines[0]).toMatch(/does not exist yet/);
    for (const path of ["/api/v1/pools", "/api/v1/workers", "/api/v1/scheduler", "/api/v1/freshness", "/api/v1/incidents", "/api/v1/datasets", "/api/v1/dataset-events", "/api/v1/watermarks", "/api/v1/backfills", "/api/v1/audit"]) {
      await get(path);
    }
    const preview = await call(app, "/api/v1/backfills/preview", { token: viewer, body: { pipelineId: "sales", from: "2026-09-01", to: "2026-09-04", reprocess: "failed" } });
    expect(preview.body.items.map((i: { businessDate: string; action: string }) => `${i.businessDate} ${i.action}`)).toEqual(["2026-09-01 leave", "2026-09-02 leave", "2026-09-03 rerun", "2026-09-04 leave"]);
    const created = await call(app, "/api/v1/backfills", { token: operator, body: { pipelineId: "sales", from: "2026-09-01", to: "2026-09-04", reprocess: "failed", reason: "reload the bad day" } });
    expect(created.status).toBe(201);
    expect(created.body.audit).toMatchObject({ actor: "alice", action: "backfill" });
    const id = created.body.backfill.backfillId;
    expect((await get(`/api/v1/backfills/${id}`)).items).toHaveLength(4);
    const paused = await call(app, `/api/v1/backfills/${id}/pause`, { token: operator, body: { reason: "wait for finance" } });
    expect(paused.body.backfill.state).toBe("paused");
    const pool = await call(app, "/api/v1/pools/warehouse", { method: "PUT", token: operator, body: { slots: 2, reason: "more room" } });
    expect(pool.body).toMatchObject({ pool: { name: "warehouse", slots: 2 }, audit: { action: "pool-set", actor: "alice" } });
  });

  it("reads an attempt's log by byte range, whole as a download, and followed", async () => {
    const app = testApp(h.engine);
    const base = "/api/v1/runs/sales@2026-09-03/tasks/load/attempts/1/log";
    const whole = await call(app, base, { token: viewer });
    expect(whole.body).toMatchObject({ offset: 0, ended: true, complete: true });
    expect(whole.body.text).toContain("loading 2026-09-03");
    const size = whole.body.size as number;
    const part = await call(app, `${base}?offset=3&length=5`, { token: viewer });
    expect(part.body).toMatchObject({ offset: 3, nextOffset: 8, size, complete: false, text: whole.body.text.slice(3, 8) });
    const download = await call(app, `${base}?download=true`, { token: viewer });
    expect(download.headers.get("content-disposition")).toContain("attachment");
    expect(download.body).toBe(whole.body.text);
    const followed = await call(app, `${base}?follow=true&offset=${size - 10}`, { token: viewer });
    expect(followed.body).toBe(whole.body.text.slice(size - 10));
  });

  it("publishes an OpenAPI 3.1 document generated from the schemas that validate requests", async () => {
    const app = testApp(h.engine);
    const doc = (await call(app, "/api/v1/openapi.json")).body;
    expect(doc.openapi).toBe("3.1.0");
    const trigger = doc.paths["/pipelines/{pipelineId}/runs"].post;
    const body = trigger.requestBody.content["application/json"].schema;
    expect(body.required).toEqual(expect.arrayContaining(["date", "reason"]));
    expect(body.properties.reason.description).toMatch(/audit/);
    const list = doc.paths["/pipelines/{pipelineId}/runs"].get;
    expect(list.parameters.map((p: { name: string; in: string }) => `${p.in} ${p.name}`)).toEqual(
      ["path pipelineId", "query state", "query trigger", "query code", "query from", "query to", "query limit", "query cursor"],
    );
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/events", "/audit", "/backfills/preview", "/runs/{runId}/tasks/{taskId}/attempts/{try}/log"]));
  });
});
