import type { Hono } from "hono";
import { z } from "zod";
import { IntervalNotEndedError } from "../../core/model/errors.ts";
import { FieldError } from "../problem.ts";
import type { AuditEntry } from "../../store/port.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { toApi } from "./json.ts";
import { pipelineDetail, pipelineGraph, pipelineSummary } from "./present.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";
import { named } from "./versions.ts";
import { businessDate, cursor, decodeCursor, encodeCursor, pageLimit, pipelineParams, reason, runStates, triggerKinds } from "./schemas.ts";

export function pipelineRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine }: AppDeps): void {
  addRoute(api, registry, {
    method: "get", path: "/pipelines", tag: "pipelines", summary: "Every loaded pipeline: schedule in its zone, paused, next run",
    responds: { status: 200, description: "{ items: [pipeline] }" },
    handle: async (c) => c.json(toApi({ items: await Promise.all(engine.pipelines().map((p) => pipelineSummary(engine, p))) })),
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId", tag: "pipelines", summary: "A pipeline: tasks and policies, frozen periods, promises, definition",
    params: pipelineParams,
    responds: { status: 200, description: "the pipeline" },
    handle: async (c, { params }) => c.json(toApi(await pipelineDetail(engine, engine.pipeline(params.pipelineId)))),
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/graph", tag: "pipelines", summary: "The DAG: task and dataset nodes, edges",
    params: pipelineParams,
    responds: { status: 200, description: "{ nodes, edges }" },
    handle: (c, { params }) => c.json(pipelineGraph(engine.pipeline(params.pipelineId))),
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/schedule", tag: "pipelines", summary: "The next runs the schedule will create",
    params: pipelineParams,
    query: z.object({ count: z.coerce.number().int().min(1).max(366).default(10).describe("how many") }),
    responds: { status: 200, description: "{ schedule, items: [{ businessDate, intervalStart, intervalEnd, firesAt }] }" },
    handle: (c, { params, query }) => {
      const pipeline = engine.pipeline(params.pipelineId);
      const items = engine.preview(params.pipelineId, query.count).map((d) => ({ businessDate: d.interval.businessDate, intervalStart: d.interval.start, intervalEnd: d.interval.end, firesAt: d.firesAt }));
      return c.json(toApi({ schedule: pipeline.schedule.describe(), timezone: pipeline.schedule.timezone, items }));
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/expected", tag: "pipelines",
    summary: "The ledger of expected runs: every due interval as ran, running, skipped by policy, or missing with its reason",
    params: pipelineParams,
    query: z.object({
      from: z.string().optional().describe("first interval start: a date or an instant (in the pipeline's zone)"),
      to: z.string().optional().describe("end of the range, exclusive"),
      limit: z.coerce.number().int().min(1).max(3660).default(30).describe("without from: how many intervals back"),
    }),
    responds: { status: 200, description: "{ items: [{ interval, firesAt, status, runId, note }] }" },
    handle: async (c, { params, query }) => c.json(toApi({ items: await engine.expected(params.pipelineId, query) })),
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/runs", tag: "runs",
    summary: "A page of the pipeline's runs, newest business date first (keyset: limit, cursor -> next_cursor)",
    params: pipelineParams,
    query: z.object({
      state: runStates, trigger: triggerKinds,
      code: z.string().min(1).max(64).optional().describe("only the runs pinned to this code version (in full)"),
      from: businessDate.optional().describe("first business date, inclusive"),
      to: businessDate.optional().describe("last business date, inclusive"),
      limit: pageLimit, cursor,
    }),
    responds: { status: 200, description: "{ items: [run], next_cursor }" },
    handle: async (c, { params, query }) => {
      const page = await named("code", () => engine.runsPage(params.pipelineId, {
        states: query.state, triggers: query.trigger, codeVersion: query.code, fromDate: query.from, toDate: query.to, limit: query.limit,
        after: decodeCursor(query.cursor, z.number().int()),
      }));
      return c.json({ items: toApi(page.items), next_cursor: encodeCursor(page.next) });
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/grid", tag: "runs",
    summary: "Business dates x tasks: the runs in a date range (newest first) and all their task instances",
    params: pipelineParams,
    query: z.object({ from: businessDate.describe("first business date, inclusive"), to: businessDate.describe("last business date, inclusive") }),
    responds: { status: 200, description: "{ runs: [run], tasks: [task instance] }" },
    handle: async (c, { params, query }) => c.json(toApi(await engine.taskGrid(params.pipelineId, { fromDate: query.from, toDate: query.to }))),
  });

  addRoute(api, registry, {
    method: "post", path: "/pipelines/:pipelineId/runs", tag: "actions",
    summary: "Trigger: a manual run for a business date, for the workers to run", action: true,
    params: pipelineParams,
    body: z.object({
      date: businessDate,
      reason,
      openFrozen: z.string().trim().min(1).optional().describe("run a frozen date anyway; why"),
      params: z.record(z.string(), z.unknown()).optional().describe("overrides of the pipeline's params"),
    }),
    responds: { status: 201, description: "{ run, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      const run = await engine.trigger(params.pipelineId, body.date, { ...body, actor: principal.actor, onAudit: (e) => (audit = e) }).catch((error) => {
        throw error instanceof IntervalNotEndedError ? new FieldError("date", error.message) : error;
      });
      return c.json(toApi({ run, audit }), 201);
    },
  });

  for (const paused of [true, false]) {
    addRoute(api, registry, {
      method: "post", path: `/pipelines/:pipelineId/${paused ? "pause" : "unpause"}`, tag: "actions", action: true,
      summary: paused ? "Pause: stop creating runs" : "Unpause: create runs again, catching up under the run cap",
      params: pipelineParams,
      body: z.object({ reason, ...(paused ? { stop: z.boolean().optional().describe("also stop its remote jobs: external tasks waiting on one are skipped and their jobs cancelled") } : {}) }),
      responds: { status: 200, description: "{ state, audit }" },
      handle: async (c, { params, body, principal }) => {
        let audit: AuditEntry | undefined;
        const request = { note: body.reason, stop: (body as { stop?: boolean }).stop, actor: principal.actor, onAudit: (e: AuditEntry) => (audit = e) };
        const state = paused ? await engine.pause(params.pipelineId, request) : await engine.unpause(params.pipelineId, request);
        return c.json(toApi({ state, audit }));
      },
    });
  }

  addRoute(api, registry, {
    method: "get", path: "/pipelines/:pipelineId/watermarks", tag: "datasets", summary: "The pipeline's incremental-load watermarks",
    params: pipelineParams,
    responds: { status: 200, description: "{ items: [{ pipelineId, taskId, value, updatedAt }] }" },
    handle: async (c, { params }) => c.json(toApi({ items: await engine.watermarks(params.pipelineId) })),
  });
}
