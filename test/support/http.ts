import { randomBytes } from "node:crypto";
import type { Hono } from "hono";
import { buildApp } from "../../src/http/app.ts";
import type { AppEnv } from "../../src/http/env.ts";
import type { Engine } from "../../src/engine/engine.ts";

export const HOST = "127.0.0.1:8080";

/** The app over an engine, as `idem serve` builds it on loopback; `localUser` null: tokens only. */
export function testApp(engine: Engine, localUser: string | null = null): Hono<AppEnv> {
  // The 500s some tests provoke are heard here, not written to stderr.
  engine.events.on("request:failed", () => {});
  return buildApp({ engine, tokens: engine, allowedHosts: ["127.0.0.1", "localhost"], localUser, secret: randomBytes(32) });
}

/** A request as a client on this machine sends it (Host set), with a bearer token when given. */
export async function call(app: Hono<AppEnv>, path: string, init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { host: HOST, ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.body !== undefined) headers["content-type"] ??= "application/json";
  const response = await app.request(path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === "string" ? init.body : JSON.stringify(init.body),
  });
  const type = response.headers.get("content-type") ?? "";
  const body = type.includes("json") ? await response.json() : await response.text();
  return { status: response.status, type, body: body as any, headers: response.headers };
}
