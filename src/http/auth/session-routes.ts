import { Hono } from "hono";
import { deleteCookie, setCookie } from "hono/cookie";
import type { AppDeps, AppEnv } from "../env.ts";
import { problem } from "../problem.ts";
import { SESSION_COOKIE } from "./principal.ts";

/**
 * The UI's login: a token is exchanged once for an HttpOnly, SameSite=Strict cookie, so page
 * scripts never hold it. `POST /auth/session` takes a form (`token`, `_csrf`, optional `next`)
 * and redirects, or JSON `{ "token": "..." }` and answers 204. `POST /auth/logout` drops it.
 */
export function sessionRoutes(deps: AppDeps): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.post("/session", async (c) => {
    const isForm = !(c.req.header("content-type") ?? "").startsWith("application/json");
    const body: Record<string, unknown> = isForm ? await c.req.parseBody() : await c.req.json().catch(() => ({}));
    const secret = typeof body.token === "string" ? body.token.trim() : "";
    if (!secret) return problem(c, 422, "give the token (idem tokens create prints it)", { field: "token" });
    const token = await deps.tokens.verifyToken(secret);
    if (!token) return problem(c, 401, "the token is unknown or revoked", { field: "token" });
    setCookie(c, SESSION_COOKIE, secret, {
      httpOnly: true,
      sameSite: "Strict",
      path: "/",
      secure: new URL(c.req.url).protocol === "https:",
    });
    if (!isForm) return c.body(null, 204);
    return c.redirect(localPath(body.next), 303);
  });
  routes.post("/logout", (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: "/" });
    return c.redirect("/", 303);
  });
  return routes;
}

/** Only a path on this server: "//evil.example" or "https://..." would be an open redirect. */
function localPath(next: unknown): string {
  return typeof next === "string" && next.startsWith("/") && !next.startsWith("//") && !next.startsWith("/\\") ? next : "/";
}
