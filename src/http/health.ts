import { Hono } from "hono";
import type { AppDeps, AppEnv } from "./env.ts";

/**
 * GET /health: for load balancers and uptime checks, so it needs no token. It says whether the
 * installation is healthy (the freshness checker passes and a scheduler leads, every pipeline file
 * loads), who runs the checker and how long ago its last pass was; 503 when unhealthy. Messages
 * of broken files (which may quote code) are only in the authenticated /api/v1/health.
 */
export function healthRoutes({ engine }: AppDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.get("/health", async (c) => {
    const health = await engine.installationHealth();
    const healthy = health.checker.healthy && health.brokenFiles.length === 0;
    c.header("cache-control", "no-store");
    return c.json(
      {
        status: health.status,
        healthy,
        checker: { status: health.checker.status, holder: health.checker.holder, lastPassAgeMs: health.checker.lastPassAgeMs },
        scheduler: { live: health.checker.scheduler.live, holder: health.checker.scheduler.holder, heartbeatAgeMs: health.checker.scheduler.heartbeatAgeMs },
        brokenFiles: health.brokenFiles.map((f) => ({ file: f.file, line: f.line })),
        message: health.checker.message + (health.brokenFiles.length ? `; ${health.brokenFiles.length} pipeline file(s) did not load` : ""),
      },
      healthy ? 200 : 503,
    );
  });
  return routes;
}
