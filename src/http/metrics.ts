import { Hono } from "hono";
import { requirePrincipal } from "./auth/principal.ts";
import type { AppDeps, AppEnv } from "./env.ts";

/**
 * GET /metrics: the process's metrics in Prometheus' text format (docs/observability.md). Like
 * the API it needs someone known: a viewer token (Prometheus sends it with `authorization` in its
 * scrape config), or the local user on loopback while no token exists.
 */
export function metricsRoutes({ engine }: AppDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.get("/metrics", requirePrincipal(), async (c) => {
    const { contentType, text } = await (await engine.metrics()).scrape();
    c.header("cache-control", "no-store");
    c.header("content-type", contentType);
    return c.body(text);
  });
  return routes;
}
