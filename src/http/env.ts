import type { Context } from "hono";
import type { Engine } from "../engine/engine.ts";

export type Role = "viewer" | "operator";

/** Who is asking, as every route sees it. */
export interface Principal {
  /** The name written to the audit log: the token's name, or the local OS user. */
  actor: string;
  role: Role;
  /** Operators may act (trigger, clear, pause, ...); viewers only look. */
  mayAct: boolean;
  /** True when nobody logged in: the server is on loopback with no token, and the OS user acts. */
  localUser: boolean;
  /** How the request proved who it is. */
  via: "bearer" | "cookie" | "local";
}

/** A token as the engine knows it after checking the secret. */
export interface VerifiedToken {
  name: string;
  role: Role;
  /** The stored hash: it keys the session's CSRF token, so every server against one store agrees. */
  hash: string;
}

/** What the auth middleware asks the engine. */
export interface TokenVerifier {
  /** True when at least one token that is not revoked exists. */
  hasTokens(): Promise<boolean>;
  verifyToken(secret: string): Promise<VerifiedToken | null>;
}

/** What the app is built from. */
export interface AppDeps {
  engine: Engine;
  /** Host names (without port) a request's Host header may carry; anything else is refused (DNS rebinding). */
  allowedHosts: readonly string[];
  /** Set when the server listens on loopback only: the OS user acts when no token exists. */
  localUser: string | null;
  /** Checks tokens (the engine, in `idem serve`). */
  tokens: TokenVerifier;
  /** Signs CSRF tokens of the local user and of anonymous login forms; random per process. */
  secret: Buffer;
  /**
   * How often a long-lived response (the events stream, a followed log) checks that its
   * credentials still hold; one revoked meanwhile ends it. Default 5 s.
   */
  credentialRecheckMs?: number;
}

export interface AppEnv {
  Variables: {
    /** Null for a request with no (valid) credentials: API routes answer 401, pages offer the login form. */
    principal: Principal | null;
    /** The value forms must send back as the `_csrf` field (or scripts as the X-CSRF-Token header). */
    csrfToken: string;
    /** True while the credentials this request came with still hold (the token is not revoked, ...). */
    stillAllowed: () => Promise<boolean>;
  };
}

export function principalOf(c: Context<AppEnv>): Principal | null {
  return c.get("principal");
}

export function csrfTokenOf(c: Context<AppEnv>): string {
  return c.get("csrfToken");
}

/** The default of `AppDeps.credentialRecheckMs`. */
export const CREDENTIAL_RECHECK_MS = 5_000;
