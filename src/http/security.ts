import type { MiddlewareHandler } from "hono";
import { secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "./env.ts";
import { problem } from "./problem.ts";

/**
 * Refuses a request whose Host header names a host we do not serve. A page on evil.example that
 * rebinds its name to 127.0.0.1 still sends `Host: evil.example`, so it never reaches a route.
 */
export function hostAllowList(allowed: readonly string[]): MiddlewareHandler<AppEnv> {
  const names = new Set(allowed.map((h) => h.toLowerCase()));
  return async (c, next) => {
    const host = hostName(c.req.header("host") ?? "");
    if (!names.has(host)) {
      return problem(c, 403, `host ${JSON.stringify(host)} is not served here (allowed: ${[...names].join(", ")}); start idem serve with --allow-host ${host || "<name>"}`, { field: "Host" });
    }
    await next();
  };
}

/** "127.0.0.1:8080" -> "127.0.0.1", "[::1]:80" -> "[::1]", "Example.org" -> "example.org". */
export function hostName(hostHeader: string): string {
  const value = hostHeader.trim().toLowerCase();
  if (value.startsWith("[")) return value.slice(0, value.indexOf("]") + 1);
  const colon = value.indexOf(":");
  return colon === -1 ? value : value.slice(0, colon);
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * A state-changing request from another site is refused before anything reads its body: the
 * browser says where it comes from in Origin (or, where Origin is missing, Sec-Fetch-Site).
 * Clients that are not browsers send neither and are judged by their credentials alone.
 */
export function sameOriginWrites(): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!SAFE_METHODS.has(c.req.method)) {
      const origin = c.req.header("origin");
      const host = (c.req.header("host") ?? "").toLowerCase();
      if (origin !== undefined) {
        let originHost: string | null = null;
        try {
          originHost = origin === "null" ? null : new URL(origin).host.toLowerCase();
        } catch {
          originHost = null;
        }
        if (originHost !== host) return problem(c, 403, `cross-origin ${c.req.method} from ${origin} refused`, { field: "Origin" });
      } else {
        const site = c.req.header("sec-fetch-site");
        if (site !== undefined && site !== "same-origin" && site !== "none") {
          return problem(c, 403, `cross-site ${c.req.method} refused (Sec-Fetch-Site: ${site})`, { field: "Sec-Fetch-Site" });
        }
      }
    }
    await next();
  };
}

/**
 * Everything a page needs comes from idem itself (no CDN, no font service), so the policy allows
 * 'self' only; nothing may frame the pages.
 */
export function idemSecureHeaders(): MiddlewareHandler<AppEnv> {
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", "data:"],
      connectSrc: ["'self'"],
      fontSrc: ["'self'"],
      objectSrc: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
    },
    crossOriginResourcePolicy: "same-origin",
    crossOriginOpenerPolicy: "same-origin",
    // "no-referrer" would make browsers send `Origin: null` on same-origin form posts.
    referrerPolicy: "same-origin",
    strictTransportSecurity: false,
    xFrameOptions: "DENY",
  });
}
