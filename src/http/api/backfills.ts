import type { Hono } from "hono";
import { z } from "zod";
import type { AuditEntry } from "../../store/port.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { toApi } from "./json.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";
import { businessDate, pageLimit, reason } from "./schemas.ts";

const backfillRequest = z.object({
  pipelineId: z.string().min(1).describe("the pipeline to backfill"),
  from: businessDate.describe("first business date, inclusive"),
  to: businessDate.describe("last business date, inclusive"),
  reprocess: z.enum(["none", "failed", "all"]).default("none").describe("which dates that already ran run again"),
  backwards: z.boolean().default(false).describe("newest date first"),
  maxActiveRuns: z.number().int().min(1).max(1000).default(4),
  tasks: z.string().min(1).optional().describe("a regular expression over task ids: only those tasks run"),
  downstream: z.boolean().default(false).describe("with tasks: everything downstream of them too"),
  openFrozen: z.string().trim().min(1).optional().describe("rewrite frozen dates anyway; why"),
  code: z.enum(["same", "latest"]).default("latest").describe("the code the runs it runs again run: latest (the pipeline as loaded, the default) or same (each run's own code version); new runs run the latest"),
});

const backfillParams = z.object({ backfillId: z.string().min(1).describe("backfill id, e.g. bf_1a2b3c4d") });

export function backfillRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine }: AppDeps): void {
  addRoute(api, registry, {
    method: "get", path: "/backfills", tag: "backfills", summary: "Backfills, newest first, with progress",
    query: z.object({ pipeline: z.string().optional().describe("only this pipeline's"), limit: pageLimit }),
    responds: { status: 200, description: "{ items: [backfill with progress] }" },
    handle: async (c, { query }) => {
      if (query.pipeline) engine.pipeline(query.pipeline);
      return c.json(toApi({ items: await engine.backfills({ pipelineId: query.pipeline, limit: query.limit }) }));
    },
  });

  addRoute(api, registry, {
    method: "post", path: "/backfills/preview", tag: "backfills",
    summary: "The plan before anything is created: every date with its action and reason (frozen dates refused), and the cost estimate",
    body: backfillRequest,
    responds: { status: 200, description: "the plan: { items: [{ businessDate, action, why, runId }], estimate, ... }" },
    handle: async (c, { body }) => c.json(toApi(await engine.planBackfill(body.pipelineId, body))),
  });

  addRoute(api, registry, {
    method: "post", path: "/backfills", tag: "actions", action: true,
    summary: "Create a backfill (the same live one asked again is returned, not duplicated); the scheduler runs it",
    body: backfillRequest.extend({ reason }),
    responds: { status: 201, description: "{ backfill, created, plan, audit } (200 when it already existed)" },
    handle: async (c, { body, principal }) => {
      let audit: AuditEntry | undefined;
      const result = await engine.backfill(body.pipelineId, { ...body, actor: principal.actor, onAudit: (e) => (audit = e) });
      return c.json(toApi({ ...result, audit: audit ?? null }), result.created ? 201 : 200);
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/backfills/:backfillId", tag: "backfills", summary: "A backfill: its plan per date and its progress",
    params: backfillParams,
    responds: { status: 200, description: "{ backfill, items }" },
    handle: async (c, { params }) => {
      const backfill = await engine.backfillStatus(params.backfillId);
      return c.json(toApi({ backfill, items: await engine.backfillItems(params.backfillId) }));
    },
  });

  for (const action of ["pause", "resume", "cancel"] as const) {
    addRoute(api, registry, {
      method: "post", path: `/backfills/:backfillId/${action}`, tag: "actions", action: true,
      summary: `${action[0]!.toUpperCase()}${action.slice(1)} a running or paused backfill`,
      params: backfillParams,
      body: z.object({ reason }),
      responds: { status: 200, description: "{ backfill, audit }" },
      handle: async (c, { params, body, principal }) => {
        let audit: AuditEntry | undefined;
        const backfill = await engine.controlBackfill(params.backfillId, action, { reason: body.reason, actor: principal.actor, onAudit: (e) => (audit = e) });
        return c.json(toApi({ backfill, audit }));
      },
    });
  }
}
