import { Temporal } from "temporal-polyfill";
import { DefinitionError } from "../model/errors.ts";
import { validateSeverityOverride, type SeverityOverride } from "../model/incidents.ts";
import { isValidId } from "../model/ids.ts";
import { suggestion } from "../model/nearest-name.ts";
import { assertTimeZone } from "../time/dates.ts";

/**
 * A freshness promise: business date D of a dataset is published by a deadline relative to D
 * ("D+1 06:00" in a named zone), with an earlier SLO to alarm on, and a completeness condition
 * over the publishing task's summary.
 */
export interface FreshnessPromiseInput {
  dataset: string;
  /** "D+1 06:00": days after the business date, and a local time. */
  deadline: string;
  /** Earlier alarm, same form. */
  slo?: string;
  /** Zone of the deadline and SLO; default the pipeline's schedule zone. */
  timezone?: string;
  /** What the publishing task's summary must say for D to count as published. */
  completeness?: CompletenessRule | ((summary: Record<string, unknown>) => true | string);
  owner?: string;
  /** How urgent its incidents are: one level, or one per kind (`{ sla_missed: "critical" }`); default by kind. */
  severity?: SeverityOverride;
  /** Notifier names from the project config. */
  notify?: readonly string[];
}

export interface CompletenessRule {
  equals?: Record<string, number | string | boolean>;
  atMost?: Record<string, number>;
  atLeast?: Record<string, number>;
}

export interface RelativeTime {
  days: number;
  time: string;
}

export interface FreshnessPromise {
  dataset: string;
  deadline: RelativeTime;
  slo: RelativeTime | null;
  timezone: string;
  completeness: ((summary: Record<string, unknown>) => true | string) | null;
  completenessJson: CompletenessRule | "function" | null;
  owner: string | null;
  severity: SeverityOverride | null;
  notify: readonly string[];
}

const PROMISE_KEYS = ["dataset", "deadline", "slo", "timezone", "completeness", "owner", "severity", "notify"] satisfies (keyof FreshnessPromiseInput)[] as string[];

const RELATIVE = /^D\+(\d{1,2}) ([01]\d|2[0-3]):([0-5]\d)$/;

export function parseRelativeTime(text: string, what: string): RelativeTime {
  const match = typeof text === "string" ? RELATIVE.exec(text.trim()) : null;
  if (!match) throw new DefinitionError(`${what} ${JSON.stringify(text)}: expected "D+<days> HH:MM", e.g. "D+1 06:00"`);
  return { days: Number(match[1]), time: `${match[2]}:${match[3]}` };
}

export function resolvePromise(input: FreshnessPromiseInput, defaultZone: string): FreshnessPromise {
  if (!input || typeof input !== "object") throw new DefinitionError("a promise must be an object");
  if (typeof input.dataset !== "string" || !/^[A-Za-z_][A-Za-z0-9_.\/-]{0,199}$/.test(input.dataset)) {
    throw new DefinitionError(`promise: invalid dataset name ${JSON.stringify(input.dataset)}`);
  }
  for (const key of Object.keys(input)) {
    if (!PROMISE_KEYS.includes(key)) throw new DefinitionError(`promise ${input.dataset}: unknown key "${key}"${suggestion(key, PROMISE_KEYS)}`);
  }
  const where = `promise ${input.dataset}:`;
  const deadline = parseRelativeTime(input.deadline, `${where} deadline`);
  const slo = input.slo === undefined ? null : parseRelativeTime(input.slo, `${where} slo`);
  const timezone = input.timezone === undefined ? defaultZone : assertTimeZone(input.timezone);
  if (slo && minutesOf(slo) > minutesOf(deadline)) throw new DefinitionError(`${where} the slo ${input.slo} comes after the deadline ${input.deadline}`);
  for (const name of input.notify ?? []) {
    if (!isValidId(name)) throw new DefinitionError(`${where} notify: invalid notifier name ${JSON.stringify(name)}`);
  }
  const rule = input.completeness;
  return {
    dataset: input.dataset,
    deadline,
    slo,
    timezone,
    completeness: rule === undefined ? null : typeof rule === "function" ? rule : ruleCheck(rule, where),
    completenessJson: rule === undefined ? null : typeof rule === "function" ? "function" : rule,
    owner: input.owner ?? null,
    severity: input.severity === undefined ? null : validateSeverityOverride(input.severity, `${where} severity`),
    notify: [...(input.notify ?? [])],
  };
}

function minutesOf(t: RelativeTime): number {
  const [h, m] = t.time.split(":").map(Number) as [number, number];
  return t.days * 1440 + h * 60 + m;
}

/**
 * Instants already computed: a scrape, the checker and the reports ask the same few dates of every
 * promise again and again, and each costs zone arithmetic. Bounded: emptied when full.
 */
const instants = new Map<string, number>();
const INSTANTS_KEPT = 50_000;

/** The instant a relative time falls on for business date D, in the zone (gaps shift forward). */
export function instantFor(t: RelativeTime, businessDate: string, timezone: string): number {
  const key = `${t.days} ${t.time} ${businessDate} ${timezone}`;
  const known = instants.get(key);
  if (known !== undefined) return known;
  const instant = Temporal.PlainDate.from(businessDate)
    .add({ days: t.days })
    .toZonedDateTime({ timeZone: timezone, plainTime: Temporal.PlainTime.from(t.time) }).epochMilliseconds;
  if (instants.size >= INSTANTS_KEPT) instants.clear();
  instants.set(key, instant);
  return instant;
}

function ruleCheck(rule: CompletenessRule, where: string): (summary: Record<string, unknown>) => true | string {
  for (const key of Object.keys(rule)) {
    if (!["equals", "atMost", "atLeast"].includes(key)) throw new DefinitionError(`${where} completeness: unknown rule "${key}" (equals, atMost, atLeast)`);
  }
  return (summary) => {
    for (const [field, want] of Object.entries(rule.equals ?? {})) {
      if (summary[field] !== want) return `${field} is ${JSON.stringify(summary[field])}, not ${JSON.stringify(want)}`;
    }
    for (const [field, most] of Object.entries(rule.atMost ?? {})) {
      const v = summary[field];
      if (typeof v !== "number" || v > most) return `${field} is ${JSON.stringify(v)}, over ${most}`;
    }
    for (const [field, least] of Object.entries(rule.atLeast ?? {})) {
      const v = summary[field];
      if (typeof v !== "number" || v < least) return `${field} is ${JSON.stringify(v)}, under ${least}`;
    }
    return true;
  };
}
