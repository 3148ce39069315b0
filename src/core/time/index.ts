export { formatDuration, parseDuration } from "./duration.ts";
export {
  addDays,
  assertTimeZone,
  datesBetween,
  formatInstant,
  formatLocal,
  localDate,
  parseBusinessDate,
  parseInstant,
  startOfDay,
  toZoned,
} from "./dates.ts";
export { describeInterval, intervalContains, intervalKey, makeInterval } from "./interval.ts";
export type { Interval } from "./interval.ts";
export * from "./timetable.ts";
