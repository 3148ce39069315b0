import type { Context, Hono } from "hono";
import { z } from "zod";
import type { AppEnv, Principal } from "../env.ts";
import { principalOf } from "../env.ts";
import { requireOperator } from "../auth/principal.ts";
import { problem } from "../problem.ts";

type AnyObject = z.ZodObject<z.ZodRawShape>;

/** One API operation: the schemas that validate its input are the ones OpenAPI documents. */
export interface RouteSpec<P extends AnyObject, Q extends AnyObject, B extends AnyObject> {
  method: "get" | "post" | "put" | "delete";
  /** In hono's form: /runs/:runId */
  path: string;
  summary: string;
  tag: string;
  params?: P;
  query?: Q;
  body?: B;
  /** Only operators may call it; it writes an audit entry. */
  action?: boolean;
  /** It proves its sender by a signature of its body (a webhook), not by a token or a session. */
  signed?: boolean;
  /** What a success answers, for the document: status and a description (JSON unless `type` says otherwise). */
  responds: { status: number; description: string; type?: string; schema?: z.ZodType };
  handle: (c: Context<AppEnv>, input: { params: z.output<P>; query: z.output<Q>; body: z.output<B>; principal: Principal }) => Promise<Response> | Response;
}

export type AnyRouteSpec = RouteSpec<AnyObject, AnyObject, AnyObject>;

const EMPTY = z.object({});

/** Registers the operation on the router, validating params, query and body first (422 naming the field). */
export function addRoute<P extends AnyObject, Q extends AnyObject, B extends AnyObject>(
  router: Hono<AppEnv>,
  registry: AnyRouteSpec[],
  spec: RouteSpec<P, Q, B>,
): void {
  registry.push(spec as unknown as AnyRouteSpec);
  const handlers = [];
  if (spec.action) handlers.push(requireOperator());
  router.on([spec.method.toUpperCase()], [spec.path], ...handlers, async (c) => {
    const params = (spec.params ?? EMPTY).safeParse(c.req.param());
    if (!params.success) return invalid(c, params.error, "path");
    const query = (spec.query ?? EMPTY).safeParse(queryObject(c));
    if (!query.success) return invalid(c, query.error, "query");
    let raw: unknown = {};
    if (spec.body) {
      const text = await c.req.text();
      if (text.trim() !== "") {
        const type = c.req.header("content-type") ?? "";
        if (!type.startsWith("application/json")) return problem(c, 415, `send the body as application/json (got ${type || "no content type"})`, { field: "Content-Type" });
        try {
          raw = JSON.parse(text);
        } catch (error) {
          return problem(c, 400, `the body is not JSON: ${(error as Error).message}`, { field: "body" });
        }
      }
    }
    const body = (spec.body ?? EMPTY).safeParse(raw);
    if (!body.success) return invalid(c, body.error, "body");
    return spec.handle(c, {
      params: params.data as z.output<P>,
      query: query.data as z.output<Q>,
      body: body.data as z.output<B>,
      principal: principalOf(c)!,
    });
  });
}

/** Repeated query keys become arrays; single ones stay strings. */
function queryObject(c: Context): Record<string, string | string[]> {
  const all = c.req.queries();
  return Object.fromEntries(Object.entries(all).map(([k, v]) => [k, v.length === 1 ? v[0]! : v]));
}

function invalid(c: Context, error: z.ZodError, where: "path" | "query" | "body"): Response {
  const errors = error.issues.map((issue) => ({
    field: issue.path.length ? issue.path.join(".") : where,
    message: issue.message,
  }));
  const first = errors[0]!;
  return problem(c, 422, `${where} ${first.field}: ${first.message}`, { field: first.field, errors });
}
