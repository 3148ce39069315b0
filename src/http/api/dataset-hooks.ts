import { Hono, type MiddlewareHandler } from "hono";
import type { Engine, WebhookRefusal } from "../../engine/engine.ts";
import type { AppDeps, AppEnv } from "../env.ts";
import { problem } from "../problem.ts";
import { datasetEventBody, datasetParams, emitted } from "./dataset-events.ts";
import { addRoute, type AnyRouteSpec } from "./route.ts";

/** The header a signed webhook request carries: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = "Idem-Signature";

const STATUS: Record<WebhookRefusal["kind"], 401 | 404 | 503> = { off: 404, "no-secret": 503, signature: 401 };

/**
 * `POST /hooks/datasets/{name}`: the dataset event of `POST /datasets/{name}/events` for systems
 * that can only call a URL. It proves its sender by an HMAC signature of its body under the
 * configured secret, not by a token or a session, so it is mounted before anyone is resolved
 * as the principal (and needs no CSRF token: it has no ambient credentials).
 */
export function datasetHookRoutes({ engine }: AppDeps, registry: AnyRouteSpec[]): Hono<AppEnv> {
  const hooks = new Hono<AppEnv>();
  hooks.use("/hooks/datasets/:name", signed(engine));
  addRoute(hooks, registry, {
    method: "post", path: "/hooks/datasets/:name", tag: "datasets", signed: true,
    summary: `Record that a dataset is ready, signed instead of authenticated: the ${SIGNATURE_HEADER} header (t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">) under the secret that datasetWebhook names in idem.config.ts`,
    params: datasetParams,
    body: datasetEventBody,
    responds: {
      status: 201,
      description: "as POST /datasets/{name}/events: 201 { event, created: true, audit }, or 200 with the first event of a known idempotency key. 401 for a missing, malformed, stale or wrong signature; 404 when no webhook is configured",
    },
    handle: (c, { params, body }) => emitted(c, engine, params.name, { ...body, source: "webhook", actor: "webhook" }),
  });
  return hooks;
}

function signed(engine: Engine): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method !== "POST") return next();
    // The body is read as sent (hono keeps it for the route): a signature covers bytes, not a parse of them.
    const refusal = engine.datasetWebhookRefusal({ signature: c.req.header(SIGNATURE_HEADER), body: await c.req.text() });
    if (refusal) return problem(c, STATUS[refusal.kind], refusal.message, refusal.kind === "signature" ? { field: SIGNATURE_HEADER } : {});
    await next();
  };
}
