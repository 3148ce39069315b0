import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../env.ts";
import { requirePrincipal } from "../auth/principal.ts";
import { backfillRoutes } from "./backfills.ts";
import { datasetEventRoutes } from "./dataset-events.ts";
import { eventRoutes } from "./events.ts";
import { incidentRoutes } from "./incidents.ts";
import { openApiDocument } from "./openapi.ts";
import { operationRoutes } from "./operations.ts";
import { pipelineRoutes } from "./pipelines.ts";
import type { AnyRouteSpec } from "./route.ts";
import { runRoutes } from "./runs.ts";
import { versionRoutes } from "./versions.ts";

/**
 * /api/v1: JSON over everything the CLI shows and does. The OpenAPI document needs no credentials;
 * `registry` holds the operations of routers mounted apart (the signed webhooks) too.
 */
export function apiRoutes(deps: AppDeps, registry: AnyRouteSpec[] = []): Hono<AppEnv> {
  const api = new Hono<AppEnv>();
  let document: Record<string, unknown> | null = null;
  api.get("/openapi.json", (c) => c.json((document ??= openApiDocument(registry, API_VERSION))));
  api.use(requirePrincipal());
  pipelineRoutes(api, registry, deps);
  versionRoutes(api, registry, deps);
  runRoutes(api, registry, deps);
  backfillRoutes(api, registry, deps);
  operationRoutes(api, registry, deps);
  incidentRoutes(api, registry, deps);
  eventRoutes(api, registry, deps);
  datasetEventRoutes(api, registry, deps);
  return api;
}

/** /api/v1's signed webhooks: mounted before the principal is resolved (see dataset-hooks.ts). */
export { datasetHookRoutes } from "./dataset-hooks.ts";

export const API_VERSION = "1.0.0";
