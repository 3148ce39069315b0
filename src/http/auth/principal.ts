import { createHmac, timingSafeEqual } from "node:crypto";
import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { AppDeps, AppEnv, Principal, TokenVerifier } from "../env.ts";
import { problem } from "../problem.ts";

export const SESSION_COOKIE = "idem_session";

/**
 * Resolves who is asking: `Authorization: Bearer <token>`, else the session cookie, else (on
 * loopback, with no token in the store) the local OS user. A bad bearer token is a 401 at once;
 * no credentials leaves the principal null for the routes to decide.
 */
export function resolvePrincipal(deps: AppDeps): MiddlewareHandler<AppEnv> {
  const { tokens } = deps;
  return async (c, next) => {
    const header = c.req.header("authorization");
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      const token = match ? await tokens.verifyToken(match[1]!) : null;
      if (!token) return problem(c, 401, match ? "the bearer token is unknown or revoked" : "Authorization must be \"Bearer <token>\"", { field: "Authorization" });
      setPrincipal(c, { actor: token.name, role: token.role, mayAct: token.role === "operator", localUser: false, via: "bearer" }, sign(token.hash, "session"), stillValid(tokens, match![1]!, token.hash));
      return next();
    }
    const cookie = getCookie(c, SESSION_COOKIE);
    if (cookie) {
      const token = await tokens.verifyToken(cookie);
      if (token) {
        setPrincipal(c, { actor: token.name, role: token.role, mayAct: token.role === "operator", localUser: false, via: "cookie" }, sign(token.hash, "session"), stillValid(tokens, cookie, token.hash));
        return next();
      }
    }
    if (deps.localUser !== null && !(await tokens.hasTokens())) {
      // The local user may act only while no token exists: the first token created ends it.
      setPrincipal(c, { actor: deps.localUser, role: "operator", mayAct: true, localUser: true, via: "local" }, sign(deps.secret, `local:${deps.localUser}`), async () => !(await tokens.hasTokens()));
      return next();
    }
    c.set("principal", null);
    c.set("csrfToken", sign(deps.secret, "anonymous"));
    c.set("stillAllowed", async () => true);
    return next();
  };
}

function setPrincipal(c: Context<AppEnv>, principal: Principal, csrfToken: string, stillAllowed: () => Promise<boolean>): void {
  c.set("principal", principal);
  c.set("csrfToken", csrfToken);
  c.set("stillAllowed", stillAllowed);
}

/** The same token, still not revoked (a revoked one verifies as null). */
function stillValid(tokens: TokenVerifier, secret: string, hash: string): () => Promise<boolean> {
  return async () => (await tokens.verifyToken(secret))?.hash === hash;
}

/**
 * Ends a long-lived response once its credentials no longer hold: checks every `everyMs` and
 * calls `onRevoked` once. A failed check (the store unreachable) keeps the stream; the next decides.
 * Returns the function that stops checking.
 */
export function watchCredentials(c: Context<AppEnv>, everyMs: number, onRevoked: () => void): () => void {
  const stillAllowed = c.get("stillAllowed");
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    stillAllowed()
      .then((ok) => {
        if (!ok) {
          clearInterval(timer);
          onRevoked();
        }
      }, () => {})
      .finally(() => (checking = false));
  }, everyMs);
  timer.unref?.();
  return () => clearInterval(timer);
}

function sign(key: string | Buffer, purpose: string): string {
  return createHmac("sha256", key).update(`idem-csrf:${purpose}`).digest("base64url");
}

/** 401 unless someone is known. */
export function requirePrincipal(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!c.get("principal")) return problem(c, 401, "send Authorization: Bearer <token> (create one with idem tokens create)", { field: "Authorization" });
    await next();
  };
}

/** 403 for viewers: only operators act. */
export function requireOperator(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const principal = c.get("principal");
    if (!principal) return problem(c, 401, "send Authorization: Bearer <token> (create one with idem tokens create)", { field: "Authorization" });
    if (!principal.mayAct) return problem(c, 403, `${principal.actor} is a viewer; actions need an operator token`, { field: "Authorization" });
    await next();
  };
}

/**
 * Writes made with ambient credentials (the cookie, or the local user) must carry the CSRF
 * token: as the `_csrf` form field or the X-CSRF-Token header. Bearer requests need none: a
 * browser never adds that header by itself. Nor do anonymous ones (the login exchange): they
 * carry no credentials to abuse, and a login forced from another site is refused by the origin check.
 */
export function requireCsrf(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS") return next();
    const via = c.get("principal")?.via;
    if (via === undefined || via === "bearer") return next();
    let sent = c.req.header("x-csrf-token");
    if (sent === undefined) {
      const type = c.req.header("content-type") ?? "";
      if (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/form-data")) {
        const field = (await c.req.parseBody())["_csrf"];
        sent = typeof field === "string" ? field : undefined;
      }
    }
    if (sent === undefined || !equal(sent, c.get("csrfToken"))) {
      return problem(c, 403, sent === undefined ? "missing CSRF token (_csrf field or X-CSRF-Token header)" : "CSRF token does not match this session", { field: "_csrf" });
    }
    await next();
  };
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
