import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../env.ts";
import { principalOf } from "../env.ts";

/** The web UI's routes, mounted at "/" by the app. (The UI half of issue 10 replaces this file.) */
export function uiRoutes(deps: AppDeps): Hono<AppEnv> {
  const ui = new Hono<AppEnv>();
  ui.get("/", (c) => {
    const principal = principalOf(c);
    const who = principal ? `${principal.actor} (${principal.role}${principal.localUser ? ", local user" : ""})` : "not logged in";
    return c.html(`<!doctype html><title>idem</title><h1>idem</h1><p>${deps.engine.pipelines().length} pipeline(s); ${escapeHtml(who)}</p>`);
  });
  return ui;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}
