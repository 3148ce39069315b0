import { z } from "zod";
import type { AnyRouteSpec } from "./route.ts";

/** The API's OpenAPI 3.1 document, built from the zod schemas that validate each request. */
export function openApiDocument(routes: readonly AnyRouteSpec[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    const parameters = [
      ...objectParameters(route.params, "path"),
      ...objectParameters(route.query, "query"),
    ];
    const operation: Record<string, unknown> = {
      operationId: operationId(route),
      summary: route.summary,
      tags: [route.tag],
      ...(parameters.length ? { parameters } : {}),
      ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(route.body) } } } } : {}),
      responses: {
        [route.responds.status]: {
          description: route.responds.description,
          content: { [route.responds.type ?? "application/json"]: { schema: route.responds.schema ? jsonSchema(route.responds.schema) : {} } },
        },
        ...(route.params ? { 404: { $ref: "#/components/responses/Problem" } } : {}),
        ...(route.params || route.query || route.body ? { 422: { $ref: "#/components/responses/Problem" } } : {}),
        401: { $ref: "#/components/responses/Problem" },
        ...(route.action ? { 403: { $ref: "#/components/responses/Problem" }, 409: { $ref: "#/components/responses/Problem" } } : {}),
      },
      ...(route.action ? { description: `An action: operators only; it ${reasonRequired(route) ? "requires a reason and " : ""}answers with the audit entry it wrote (actor: the token's name).` } : {}),
      ...(route.signed ? { security: [{ signature: [] }] } : {}),
    };
    (paths[path] ??= {})[route.method] = operation;
  }
  return {
    openapi: "3.1.0",
    info: { title: "idem", version, description: "The HTTP API of idem: everything the CLI shows and does. Times are ISO 8601 UTC; business dates are YYYY-MM-DD and never shift." },
    servers: [{ url: "/api/v1" }],
    security: [{ bearer: [] }, { session: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "a token from `idem tokens create`" },
        session: { type: "apiKey", in: "cookie", name: "idem_session", description: "the web UI's session (POST /auth/session)" },
        signature: {
          type: "apiKey", in: "header", name: "Idem-Signature",
          description: "webhooks: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\"> under the secret in the environment variable that datasetWebhook names in idem.config.ts",
        },
      },
      schemas: {
        Problem: {
          type: "object",
          required: ["title", "status"],
          properties: {
            type: { type: "string" }, title: { type: "string" }, status: { type: "integer" }, detail: { type: "string" },
            field: { type: "string", description: "the input at fault" },
            errors: { type: "array", items: { type: "object", properties: { field: { type: "string" }, message: { type: "string" } } } },
          },
        },
      },
      responses: {
        Problem: { description: "a problem document (RFC 9457)", content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } } },
      },
    },
  };
}

function reasonRequired(route: AnyRouteSpec): boolean {
  const reason = route.body?.shape.reason;
  return reason !== undefined && !z.safeParse(reason, undefined).success;
}

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
}

function objectParameters(schema: z.ZodObject<z.ZodRawShape> | undefined, where: "path" | "query"): Record<string, unknown>[] {
  if (!schema) return [];
  const json = jsonSchema(schema) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: where,
      required: where === "path" || (json.required ?? []).includes(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

function operationId(route: AnyRouteSpec): string {
  const words = route.path.split("/").filter(Boolean).map((part) => (part.startsWith(":") ? `by-${part.slice(1)}` : part));
  return [route.method, ...words].join("-").replace(/-(\w)/g, (_, ch: string) => ch.toUpperCase());
}
