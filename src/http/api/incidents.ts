import type { Hono } from "hono";
import { z } from "zod";
import { parseDuration } from "../../core/time/duration.ts";
import type { AuditEntry } from "../../store/port.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { FieldError } from "../problem.ts";
import { toApi } from "./json.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";
import { reason } from "./schemas.ts";

const incidentParams = z.object({ key: z.string().min(1).max(500).describe("the incident's key, e.g. sla_missed:orders_daily:2026-09-01") });

const until = z
  .string()
  .refine((value) => /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(value) && Number.isFinite(Date.parse(value)), "an ISO 8601 instant with Z or an offset")
  .optional()
  .describe("snooze until this instant (ISO 8601 with Z or an offset): open again then, unless resolved");

const snoozeFor = z.string().max(50).optional().describe("snooze for this long from now, e.g. 30m, 4h, 1d; instead of until");

/** An incident's lifecycle: read one, acknowledge or snooze it, resolve it; each change audited with its actor. */
export function incidentRoutes(api: Hono<AppEnv>, registry: AnyRouteSpec[], { engine }: AppDeps): void {
  addRoute(api, registry, {
    method: "get", path: "/incidents/:key", tag: "freshness",
    summary: "One incident: its state now (open, acknowledged, resolved), who acknowledged it, why and until when, who resolved it and why",
    params: incidentParams,
    responds: { status: 200, description: "the incident" },
    handle: async (c, { params }) => c.json(toApi(await engine.incident(params.key))),
  });

  addRoute(api, registry, {
    method: "post", path: "/incidents/:key/acknowledge", tag: "actions", action: true,
    summary: "Acknowledge an incident (someone is on it); with until or for, a snooze: open again then unless resolved",
    params: incidentParams,
    body: z.object({ reason, until, for: snoozeFor }),
    responds: { status: 200, description: "{ incident, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      const incident = await engine.acknowledgeIncident(params.key, {
        reason: body.reason,
        ...(body.until !== undefined ? { until: Date.parse(body.until) } : {}),
        ...(body.for !== undefined ? { for: durationOf(body.for) } : {}),
        actor: principal.actor,
        onAudit: (e) => (audit = e),
      });
      return c.json(toApi({ incident, audit }));
    },
  });

  addRoute(api, registry, {
    method: "post", path: "/incidents/:key/resolve", tag: "actions", action: true,
    summary: "Resolve an incident by hand; the notifiers told of its opening hear of its resolution",
    params: incidentParams,
    body: z.object({ reason }),
    responds: { status: 200, description: "{ incident, audit }" },
    handle: async (c, { params, body, principal }) => {
      let audit: AuditEntry | undefined;
      const incident = await engine.resolveIncident(params.key, { reason: body.reason, actor: principal.actor, onAudit: (e) => (audit = e) });
      return c.json(toApi({ incident, audit }));
    },
  });
}

function durationOf(text: string): number {
  try {
    return parseDuration(text, "duration");
  } catch (error) {
    throw new FieldError("for", (error as Error).message);
  }
}
