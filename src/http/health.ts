import { Hono } from "hono";
import type { AppDeps, AppEnv } from "./env.ts";
import { publicHealth } from "./health-body.ts";

/**
 * GET /health: for load balancers and uptime checks, so it needs no token. The engine's one
 * verdict on the installation (`publicHealth`), the same every daemon's health port answers.
 */
export function healthRoutes({ engine }: AppDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.get("/health", async (c) => {
    const { code, body } = publicHealth(await engine.installationHealth());
    c.header("cache-control", "no-store");
    return c.json(body, code);
  });
  return routes;
}
