import type { IncidentKind, Severity, SeverityOverride } from "../model/incidents.ts";

/**
 * Who hears of an incident. Each incident has a severity (its kind's default, unless its promise
 * or pipeline says otherwise) and an owner (its promise's, else its pipeline's); the routes of
 * idem.config.ts (`alerts.routes`) choose notifiers by those, by pipeline, dataset and kind.
 */

/** A kind's severity when neither its promise nor its pipeline names one. */
export const DEFAULT_SEVERITY: Readonly<Record<IncidentKind, Severity>> = {
  scheduler_down: "critical",
  sla_missed: "critical",
  did_not_run: "error",
  run_failed: "error",
  notifier_failing: "error",
  late: "warning",
  restate_failed: "warning",
  late_publication: "info",
  before_promise: "info",
};

/**
 * The severity of an incident of `kind`: the first override that speaks of it (a promise's
 * before its pipeline's), else the kind's default.
 */
export function incidentSeverity(kind: IncidentKind, overrides: readonly (SeverityOverride | null | undefined)[]): Severity {
  for (const override of overrides) {
    if (override === null || override === undefined) continue;
    if (typeof override === "string") return override;
    const level = override[kind];
    if (level) return level;
  }
  return DEFAULT_SEVERITY[kind];
}

/** What a route may match on. Patterns take `*` for any run of characters; lists match any of their items. */
export interface RouteMatch {
  pipeline?: string | readonly string[];
  dataset?: string | readonly string[];
  owner?: string | readonly string[];
  severity?: Severity | readonly Severity[];
  kind?: IncidentKind | readonly IncidentKind[];
}

export interface AlertRoute {
  /** Every field given must match; an empty match takes every incident. */
  match: RouteMatch;
  /** Notifier names. */
  notify: readonly string[];
}

/** What routing knows of an incident. */
export interface RoutedIncident {
  kind: IncidentKind;
  pipelineId: string | null;
  dataset: string | null;
  owner: string | null;
  severity: Severity;
}

export interface RoutingInput {
  /** Notifiers the incident's promise names (`notify`): always told. */
  named: readonly string[];
  routes: readonly AlertRoute[];
  /** Told when neither the promise nor any route names a notifier (`defaultNotify`). */
  fallback: readonly string[];
}

/**
 * The notifiers of an incident: those its promise names, then those of every route that
 * matches it, in the config's order, each once; `fallback` when that is none. Every matching
 * route counts (not the first only), so a route by owner and a route by severity both hear of
 * an incident that matches both.
 */
export function routeIncident(incident: RoutedIncident, input: RoutingInput): string[] {
  const chosen = new Set(input.named);
  for (const route of input.routes) {
    if (routeMatches(route.match, incident)) for (const name of route.notify) chosen.add(name);
  }
  return chosen.size ? [...chosen] : [...new Set(input.fallback)];
}

export function routeMatches(match: RouteMatch, incident: RoutedIncident): boolean {
  return (
    matchesPattern(match.pipeline, incident.pipelineId) &&
    matchesPattern(match.dataset, incident.dataset) &&
    matchesPattern(match.owner, incident.owner) &&
    matchesExactly(match.severity, incident.severity) &&
    matchesExactly(match.kind, incident.kind)
  );
}

/** An absent condition matches anything; a present one never matches an incident without that field. */
function matchesPattern(condition: string | readonly string[] | undefined, value: string | null): boolean {
  if (condition === undefined) return true;
  if (value === null) return false;
  return (typeof condition === "string" ? [condition] : condition).some((pattern) => globMatches(pattern, value));
}

function matchesExactly<T extends string>(condition: T | readonly T[] | undefined, value: T): boolean {
  if (condition === undefined) return true;
  return typeof condition === "string" ? condition === value : condition.includes(value);
}

/** `*` matches any run of characters (none included); everything else matches itself. */
export function globMatches(pattern: string, value: string): boolean {
  const parts = pattern.split("*");
  if (parts.length === 1) return pattern === value;
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!value.startsWith(first) || value.length < first.length + last.length || !value.endsWith(last)) return false;
  let at = first.length;
  const end = value.length - last.length;
  for (const middle of parts.slice(1, -1)) {
    const found = value.indexOf(middle, at);
    if (found < 0 || found + middle.length > end) return false;
    at = found + middle.length;
  }
  return true;
}
