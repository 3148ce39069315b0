import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../env.ts";
import { principalOf } from "../env.ts";
import { requirePrincipal } from "../auth/principal.ts";

/** /api/v1: JSON over everything the CLI shows and does. */
export function apiRoutes(deps: AppDeps): Hono<AppEnv> {
  const api = new Hono<AppEnv>();
  api.use(requirePrincipal());
  api.get("/me", (c) => c.json(principalOf(c)));
  api.get("/pipelines", (c) => c.json({ items: deps.engine.pipelines().map((p) => ({ id: p.id, version: p.version })) }));
  return api;
}
