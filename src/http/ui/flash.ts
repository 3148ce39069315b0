import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../env.ts";

/**
 * What an action did, told once on the page it redirects to. It rides in a short-lived cookie,
 * not in the URL, so a reload, a bookmark or a shared link never says "created" again.
 */
export interface Flash {
  kind: "good" | "bad";
  text: string;
}

const COOKIE = "idem_flash";
/** A cookie holds about 4 KB; a longer message is cut (the audit log and the CLI have the whole). */
const MAX_CHARS = 1500;

export function setFlash(c: Context<AppEnv>, flash: Flash): void {
  const text = flash.text.length > MAX_CHARS ? `${flash.text.slice(0, MAX_CHARS)}…` : flash.text;
  setCookie(c, COOKIE, JSON.stringify({ kind: flash.kind, text }), { path: "/ui", httpOnly: true, sameSite: "Strict", maxAge: 120 });
}

/** The flash waiting for this page, if any; it is spent: the response deletes it. */
export function takeFlash(c: Context<AppEnv>): Flash | null {
  const value = getCookie(c, COOKIE);
  if (value === undefined) return null;
  deleteCookie(c, COOKIE, { path: "/ui" });
  try {
    const parsed = JSON.parse(value) as Partial<Flash>;
    if ((parsed.kind === "good" || parsed.kind === "bad") && typeof parsed.text === "string") return { kind: parsed.kind, text: parsed.text };
  } catch {
    // a cookie this server did not write: nothing to say
  }
  return null;
}
