import type { Hono } from "hono";
import { z } from "zod";
import { ALERT_STATES, type AlertState, type AuditEntry } from "../../store/port.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { fullHealth } from "../health-body.ts";
import { toApi } from "./json.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";
import { cursor, decodeCursor, encodeCursor, flag, pageLimit, reason } from "./schemas.ts";

const poolParams = z.object({ name: z.string().min(1).describe("pool name") });

/** Pools, workers, leadership, freshness, incidents, datasets, watermarks, the audit log, and who is asking. */
export function operationRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine }: AppDeps): void {
  addRoute(api, registry, {
    method: "get", path: "/me", tag: "auth", summary: "Who is asking: actor, role, whether they may act, whether it is the local OS user",
    responds: { status: 200, description: "the principal" },
    handle: (c, { principal }) => c.json(principal),
  });

  addRoute(api, registry, {
    method: "get", path: "/pools", tag: "pools", summary: "Pools: slots, slots in use and who holds them",
    responds: { status: 200, description: "{ items: [pool] }" },
    handle: async (c) => c.json(toApi({ items: await engine.pools() })),
  });

  addRoute(api, registry, {
    method: "put", path: "/pools/:name", tag: "actions", action: true, summary: "Create a pool or resize it",
    params: poolParams,
    body: z.object({ slots: z.number().int().min(0).max(1_000_000).describe("how many slots"), description: z.string().max(500).optional(), reason }),
    responds: { status: 200, description: "{ pool, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      await engine.setPool(params.name, body.slots, { description: body.description, reason: body.reason, actor: principal.actor, onAudit: (e) => (audit = e) });
      const pool = (await engine.pools()).find((p) => p.name === params.name) ?? null;
      return c.json(toApi({ pool, audit }));
    },
  });

  addRoute(api, registry, {
    method: "delete", path: "/pools/:name", tag: "actions", action: true, summary: "Delete a pool",
    params: poolParams,
    body: z.object({ reason }),
    responds: { status: 200, description: "{ audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      await engine.deletePool(params.name, { reason: body.reason, actor: principal.actor, onAudit: (e) => (audit = e) });
      return c.json(toApi({ audit }));
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/workers", tag: "workers", summary: "Workers that sent a heartbeat, and whether they look alive",
    responds: { status: 200, description: "{ items: [worker] }" },
    handle: async (c) => c.json(toApi({ items: await engine.workers() })),
  });

  addRoute(api, registry, {
    method: "get", path: "/scheduler", tag: "workers", summary: "The scheduler's leadership: who leads, its term, and whether the lease is current",
    responds: { status: 200, description: "{ leader } (null when no scheduler ever ran)" },
    handle: async (c) => c.json(toApi({ leader: await engine.leadership() })),
  });

  addRoute(api, registry, {
    method: "get", path: "/health", tag: "freshness",
    summary: "Who runs the freshness checker and how long ago its last pass was, whether a scheduler leads, and the pipeline files that did not load",
    responds: { status: 200, description: "{ status, checker, holder, lastPassAgeMs, scheduler, healthy, message, brokenFiles: [{ file, line, message }] }; 503 with the same body when the store cannot be read, the checker is stale or never ran, no scheduler leads or a file did not load" },
    handle: async (c) => {
      const health = await engine.installationHealth();
      return c.json(toApi(fullHealth(health)), health.healthy ? 200 : 503);
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/freshness", tag: "freshness",
    summary: "Per promised dataset and business date: deadline and SLO against when it was published; the checker's health; open incidents",
    query: z.object({ days: z.coerce.number().int().min(1).max(366).default(7).describe("business dates per dataset") }),
    responds: { status: 200, description: "{ checker, datasets, openIncidents }" },
    handle: async (c, { query }) => c.json(toApi(await engine.freshness(query.days))),
  });

  addRoute(api, registry, {
    method: "get", path: "/incidents", tag: "freshness", summary: "A page of incidents, newest opened first",
    query: z.object({ open: flag.describe("true: open only; false: resolved only"), limit: pageLimit, cursor }),
    responds: { status: 200, description: "{ items: [incident], next_cursor }" },
    handle: async (c, { query }) => {
      const page = await engine.incidentsPage({ open: query.open, limit: query.limit, after: decodeCursor(query.cursor, z.object({ openedAt: z.number(), key: z.string() })) });
      return c.json({ items: toApi(page.items), next_cursor: encodeCursor(page.next) });
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/alerts", tag: "freshness",
    summary: "A page of alerts sent (or being sent) for incidents, newest first: notifier, kind (open/resolve), state (queued/failed/sent), tries, last error, times",
    query: z.object({
      pipeline: z.string().min(1).optional().describe("only alerts of this pipeline's incidents"),
      incident: z.string().min(1).optional().describe("only alerts of this incident (its key)"),
      state: z.enum(ALERT_STATES as [AlertState, ...AlertState[]]).optional().describe("queued: not tried yet; failed: the last try failed, another is due; sent: delivered"),
      limit: pageLimit,
      cursor,
    }),
    responds: { status: 200, description: "{ items: [alert], next_cursor }" },
    handle: async (c, { query }) => {
      const page = await engine.alertsPage({ pipelineId: query.pipeline, incidentKey: query.incident, state: query.state, limit: query.limit, after: decodeCursor(query.cursor, z.number().int()) });
      return c.json({ items: toApi(page.items), next_cursor: encodeCursor(page.next) });
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/datasets", tag: "datasets", summary: "Datasets the pipelines name: who produces, publishes, waits on and promises each",
    responds: { status: 200, description: "{ items: [dataset] }" },
    handle: (c) => c.json({ items: engine.datasets() }),
  });

  addRoute(api, registry, {
    method: "get", path: "/datasets/:dataset/events", tag: "datasets", summary: "A page of one dataset's events (a run produced it for a business date), newest first",
    params: z.object({ dataset: z.string().min(1) }),
    query: z.object({ limit: pageLimit, cursor }),
    responds: { status: 200, description: "{ items: [event], next_cursor }" },
    handle: async (c, { params, query }) => {
      const page = await engine.datasetEventsPage({ dataset: params.dataset, limit: query.limit, after: decodeCursor(query.cursor, z.number().int()) });
      return c.json({ items: toApi(page.items), next_cursor: encodeCursor(page.next) });
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/dataset-events", tag: "datasets", summary: "A page of every dataset event, newest first",
    query: z.object({ limit: pageLimit, cursor }),
    responds: { status: 200, description: "{ items: [event], next_cursor }" },
    handle: async (c, { query }) => {
      const page = await engine.datasetEventsPage({ limit: query.limit, after: decodeCursor(query.cursor, z.number().int()) });
      return c.json({ items: toApi(page.items), next_cursor: encodeCursor(page.next) });
    },
  });

  addRoute(api, registry, {
    method: "get", path: "/watermarks", tag: "datasets", summary: "Every incremental-load watermark",
    responds: { status: 200, description: "{ items: [{ pipelineId, taskId, value, updatedAt }] }" },
    handle: async (c) => c.json(toApi({ items: await engine.watermarks() })),
  });

  addRoute(api, registry, {
    method: "get", path: "/audit", tag: "audit", summary: "A page of the audit log, newest first, filtered by pipeline, actor, action and time",
    query: z.object({
      pipeline: z.string().optional(),
      actor: z.string().optional(),
      action: z.string().optional().describe("trigger, rerun, clear, skip, mark-success, mark-failed, pause, unpause, backfill, ..."),
      from: z.string().optional().describe("at or after: an instant, or a date (midnight UTC)"),
      to: z.string().optional().describe("before: an instant, or a date (midnight UTC)"),
      limit: pageLimit,
      cursor,
    }),
    responds: { status: 200, description: "{ items: [audit entry], next_cursor }" },
    handle: async (c, { query }) => {
      const page = await engine.auditPage({ ...query, pipelineId: query.pipeline, after: decodeCursor(query.cursor, z.number().int()) });
      return c.json({ items: toApi(page.items), next_cursor: encodeCursor(page.next) });
    },
  });
}
