import { Hono } from "hono";
import type { AppDeps, AppEnv } from "./env.ts";
import { requireCsrf, resolvePrincipal } from "./auth/principal.ts";
import { sessionRoutes } from "./auth/session-routes.ts";
import { problemFor } from "./errors.ts";
import { problem } from "./problem.ts";
import { hostAllowList, idemSecureHeaders, sameOriginWrites } from "./security.ts";
import { apiRoutes, datasetHookRoutes } from "./api/index.ts";
import type { AnyRouteSpec } from "./api/route.ts";
import { uiRoutes } from "./ui/index.ts";
import { healthRoutes } from "./health.ts";
import { metricsRoutes } from "./metrics.ts";

/**
 * The whole HTTP surface: the JSON API under /api/v1, the login exchange under /auth, and the
 * web UI at /, GET /health (no token) and GET /metrics (Prometheus' text format). Every request passes, in order: the Host allow-list, secure headers, the
 * cross-origin check for writes, who is asking, and the CSRF check for writes made with a cookie;
 * a signed webhook (/api/v1/hooks/...) proves its sender by its signature in place of the last two.
 * Each request served is an engine event (`request:served`), and an unexpected error one too
 * (`request:failed`, written to stderr when nothing listens).
 */
export function buildApp(deps: AppDeps): Hono<AppEnv> {
  const { events } = deps.engine;
  const app = new Hono<AppEnv>();
  app.use(async (c, next) => {
    const began = performance.now();
    await next();
    events.emit("request:served", { method: c.req.method, path: c.req.path, status: c.res.status, durationMs: Math.round(performance.now() - began) });
  });
  app.use(hostAllowList(deps.allowedHosts));
  app.use(idemSecureHeaders());
  app.use(sameOriginWrites());
  const operations: AnyRouteSpec[] = [];
  // Signed by their sender instead of authenticated: no principal, so no CSRF check either.
  app.route("/api/v1", datasetHookRoutes(deps, operations));
  // Before who is asking, which reads tokens from the store: health answers even when the store does not.
  app.route("/", healthRoutes(deps));
  app.use(resolvePrincipal(deps));
  app.use(requireCsrf());
  app.route("/", metricsRoutes(deps));
  app.route("/auth", sessionRoutes(deps));
  app.route("/api/v1", apiRoutes(deps, operations));
  app.route("/", uiRoutes(deps));
  app.notFound((c) => problem(c, 404, `no route ${c.req.method} ${c.req.path}`));
  app.onError((error, c) =>
    problemFor(c, error, (failure) => {
      if (events.heard("request:failed")) events.emit("request:failed", { method: c.req.method, path: c.req.path, error: failure });
      else process.stderr.write(`${c.req.method} ${c.req.path}: ${failure}\n`);
    }));
  return app;
}
