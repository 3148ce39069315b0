import { DefinitionError } from "../model/errors.ts";
import type { Timetable } from "./base.ts";
import { daily, manual, monthly, weekly } from "./calendar.ts";
import { cron } from "./cron.ts";
import { hourly } from "./hourly.ts";

export type { DstPolicy, Due, Timetable, TimetableKind } from "./base.ts";
export { daily, manual, monthly, weekly, WEEKDAYS } from "./calendar.ts";
export type { DailyOptions, MonthlyOptions, Weekday, WeeklyOptions } from "./calendar.ts";
export { cron } from "./cron.ts";
export { hourly } from "./hourly.ts";
export type { HourlyOptions } from "./hourly.ts";

/** The inverse of Timetable.toJSON(); as strict as the factories, unknown keys included. */
export function timetableFromJSON(json: Record<string, unknown>): Timetable {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new DefinitionError(`bad schedule ${JSON.stringify(json)}: expected an object with a "kind"`);
  }
  const { kind, ...opts } = json;
  switch (kind) {
    case "daily":
      return daily(opts);
    case "hourly":
      return hourly(opts);
    case "weekly":
      return weekly(opts);
    case "monthly":
      return monthly(opts);
    case "manual":
      return manual(opts);
    case "cron": {
      const { expression, ...rest } = opts;
      return cron(expression as string, rest);
    }
    default:
      throw new DefinitionError(
        `bad schedule kind ${JSON.stringify(kind)} (expected daily, hourly, weekly, monthly, cron or manual)`,
      );
  }
}
