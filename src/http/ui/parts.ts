import type { FrozenPeriod } from "../../core/policy/frozen.ts";
import type { Principal } from "../env.ts";
import { html, query, seg, type Content, type Html } from "./html.ts";
import { assetPath } from "./assets.ts";

/** What every page is rendered with: who is looking, the CSRF token for its forms, the URL. */
export interface View {
  principal: Principal | null;
  csrf: string;
  url: URL;
  /** The pipelines' time zones, offered first by the zone selector. */
  zones: readonly string[];
  /** What the action that redirected here did or why it was refused, told once (a cookie, never the URL). */
  flash: { kind: "good" | "bad"; text: string } | null;
}

const NAV: readonly [string, string][] = [
  ["oncall", "On call"],
  ["pipelines", "Pipelines"],
  ["backfills", "Backfills"],
  ["freshness", "Freshness"],
  ["datasets", "Datasets"],
  ["pools", "Pools"],
  ["workers", "Workers"],
  ["health", "Health"],
  ["audit", "Audit"],
];

const LOGO = html`<svg width="22" height="22" viewBox="0 0 22 22" aria-hidden="true"><rect x="1" y="1" width="20" height="20" rx="6" fill="#4a48d8"/><path d="M6 11.5l3.2 3.2L16 7.8" stroke="#fff" stroke-width="2.4" fill="none" stroke-linecap="round" stroke-linejoin="round"/></svg>`;

export function page(view: View, options: { title: string; active: string; body: Content; head?: Content }): Html {
  const p = view.principal;
  const who = p
    ? html`<span title="${p.localUser ? "No token exists and the server listens on loopback: the local OS user acts, and the audit log names them." : `Signed in with the token ${p.actor}`}">${p.localUser ? "local user " : ""}<b>${p.actor}</b> · ${p.role}</span>`
    : html`<a href="/ui/login${query({ next: view.url.pathname + view.url.search })}">Sign in</a>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · idem</title>
<link rel="stylesheet" href="${assetPath("css")}">
<link rel="icon" href="data:,">
${options.head}
</head><body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/ui">${LOGO}idem</a>
<nav class="nav">${NAV.map(([key, label]) => html`<a href="/ui${key === "oncall" ? "" : `/${key}`}"${key === options.active ? html` class="on" aria-current="page"` : ""}>${label}</a>`)}</nav>
<div class="who"><span id="live" class="live" data-src="/api/v1/events" title="connecting">live</span>
<label class="check" title="Timestamps follow this zone; business dates never move.">Zone <select id="tz" data-zones="${view.zones.join(",")}" aria-label="time zone"><option value="">Browser</option></select></label>
${who}</div>
</header>
<main id="main" tabindex="-1">
${view.flash ? html`<div class="note ${view.flash.kind}" role="status" id="flash">${view.flash.text}</div>` : ""}
${options.body}
</main>
<script src="${assetPath("js")}" defer></script>
</body></html>`;
}

export function pageHead(options: { crumbs?: readonly (readonly [string, string] | string)[]; title: Content; sub?: Content; right?: Content }): Html {
  return html`<div class="head"><div>
${options.crumbs?.length ? html`<div class="crumbs">${options.crumbs.map((c, i) => html`${i ? " / " : ""}${typeof c === "string" ? c : html`<a href="${c[1]}">${c[0]}</a>`}`)}</div>` : ""}
<h1>${options.title}</h1>${options.sub ? html`<div class="sub">${options.sub}</div>` : ""}</div>
${options.right ? html`<div>${options.right}</div>` : ""}</div>`;
}

const LABELS: Record<string, string> = {
  up_for_retry: "up for retry",
  up_for_reschedule: "up for reschedule",
  upstream_failed: "upstream failed",
  not_due: "not due",
  on_time: "on time",
  not_yet_due: "not yet due",
  none: "no run",
};

export function stateLabel(state: string): string {
  return LABELS[state] ?? state;
}

/** A state as a coloured glyph and its word; `live` ties it to SSE updates of that task instance or run. */
export function badge(state: string, live?: { ti?: string; run?: string }, label?: string): Html {
  return html`<span class="b s-${state}"${live?.ti ? html` data-ti="${live.ti}"` : ""}${live?.run ? html` data-rs="${live.run}"` : ""}>${label ?? stateLabel(state)}</span>`;
}

/** An instant: rendered in UTC, re-rendered by the page script in the selected zone (always with the zone). */
export function at(ms: number | null | undefined, seconds = false): Html | string {
  if (ms === null || ms === undefined) return "–";
  return html`<time data-t="${ms}"${seconds ? html` data-s` : ""}>${utc(ms, seconds)}</time>`;
}

function utc(ms: number, seconds: boolean): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, seconds ? 19 : 16)} UTC`;
}

export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function took(start: number | null, end: number | null, now: number): string {
  if (start === null) return "–";
  return duration((end ?? now) - start);
}

export const links = {
  pipeline: (id: string) => `/ui/pipelines/${seg(id)}`,
  grid: (id: string, q: Record<string, string | number | null | undefined> = {}) => `/ui/pipelines/${seg(id)}/grid${query(q)}`,
  graph: (id: string, runId?: string | null) => `/ui/pipelines/${seg(id)}/graph${query({ run: runId })}`,
  ledger: (id: string, q: Record<string, string | number | null | undefined> = {}) => `/ui/pipelines/${seg(id)}/ledger${query(q)}`,
  run: (runId: string) => `/ui/runs/${seg(runId)}`,
  task: (runId: string, taskId: string, tryNumber?: number | null) => `/ui/runs/${seg(runId)}/tasks/${seg(taskId)}${query({ try: tryNumber })}`,
  backfill: (id: string) => `/ui/backfills/${seg(id)}`,
  versions: (id: string) => `/ui/pipelines/${seg(id)}/versions`,
  version: (id: string, codeVersion: string, before?: number | null) => `/ui/pipelines/${seg(id)}/versions/${seg(codeVersion)}${query({ before })}`,
  versionDiff: (id: string, from?: string, to?: string) => `/ui/pipelines/${seg(id)}/versions/diff${query({ from, to })}`,
};

/** A form that changes something: CSRF token included, disabled for viewers with the reason shown. */
export function actionForm(view: View, options: { action: string; label: string; body?: Content; danger?: boolean; reason?: boolean; cls?: string }): Html {
  const may = view.principal?.mayAct ?? false;
  const why = view.principal ? `${view.principal.actor} is a viewer: actions need an operator token` : "sign in to act";
  return html`<form method="post" action="${options.action}" class="${options.cls ?? "stack"}">
<input type="hidden" name="_csrf" value="${view.csrf}">
<input type="hidden" name="back" value="${view.url.pathname + view.url.search}">
${options.body}
${options.reason === false ? "" : html`<label>Reason (written to the audit log)<input name="reason" required minlength="3" placeholder="why, for the audit log" autocomplete="off"></label>`}
<div><button type="submit" class="${options.danger ? "danger" : "primary"}"${may ? "" : html` disabled title="${why}"`}>${options.label}</button>${may ? "" : html` <span class="muted">${why}</span>`}</div>
</form>`;
}

/**
 * A frozen business date: who owns the period and why, and, in a form that would rewrite it, the
 * way out the engine's refusal names (`openFrozen`, a reason kept in the audit log). Only an
 * operator may take it; a viewer is told so.
 */
export function frozenNote(view: View, freeze: FrozenPeriod, date: string): Html {
  return html`<div class="note frozen" id="frozen" role="note"><b>❄ ${date} is frozen</b>: ${freeze.from}..${freeze.to} by <b>${freeze.owner}</b>: ${freeze.reason}.
${view.principal?.mayAct ? "Rewriting it needs a reason for opening the frozen period, which the audit log keeps." : "Only an operator may open the frozen period to rewrite it."}</div>`;
}

export function openFrozenField(view: View, freeze: FrozenPeriod | null): Content {
  if (!freeze || !view.principal?.mayAct) return "";
  return html`<label>Open the frozen period (${freeze.owner}): why<input name="openFrozen" required minlength="3" placeholder="who agreed, and why" autocomplete="off"></label>`;
}

export function empty(text: Content): Html {
  return html`<div class="empty">${text}</div>`;
}

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n.toLocaleString("en")} ${n === 1 ? word : many}`;
}
