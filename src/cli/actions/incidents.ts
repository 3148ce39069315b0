import { UsageError } from "../../core/model/errors.ts";
import { parseDuration } from "../../core/time/duration.ts";
import { parseInstant } from "../../core/time/dates.ts";
import type { IncidentView } from "../../engine/engine.ts";
import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

const STATE_ONLY = { pipelines: false } as const;

export function incidents(cli: Cli, flags: { all?: boolean; json?: boolean }) {
  return withEngine(cli, STATE_ONLY, async (engine) => {
    const list = await engine.incidents({ open: !flags.all });
    if (flags.json) return printJson(list);
    if (list.length === 0) return console.log(flags.all ? "no incidents" : "no open incidents");
    console.log(table(["opened", "key", "state", "message"], list.map((i) => [isoTime(i.openedAt), i.key, stateOf(i), i.message])));
  });
}

export function acknowledge(cli: Cli, key: string, flags: { reason?: string }) {
  return withEngine(cli, STATE_ONLY, async (engine, actor) => {
    console.log(`${key}: ${stateOf(await engine.acknowledgeIncident(key, { reason: needReason(flags.reason), actor }))}`);
  });
}

export function snooze(cli: Cli, key: string, flags: { for?: string; until?: string; reason?: string }) {
  return withEngine(cli, STATE_ONLY, async (engine, actor) => {
    if ((flags.for === undefined) === (flags.until === undefined)) throw new UsageError("give --for <duration> or --until <instant>: how long to snooze");
    const reason = needReason(flags.reason);
    const snoozed = flags.for !== undefined
      ? await engine.acknowledgeIncident(key, { reason, actor, for: parsed("--for", () => parseDuration(flags.for!, "duration")) })
      : await engine.acknowledgeIncident(key, { reason, actor, until: parsed("--until", () => parseInstant(flags.until!, "UTC")) });
    console.log(`${key}: ${stateOf(snoozed)}`);
  });
}

export function resolve(cli: Cli, key: string, flags: { reason?: string }) {
  return withEngine(cli, STATE_ONLY, async (engine, actor) => {
    console.log(`${key}: ${stateOf(await engine.resolveIncident(key, { reason: needReason(flags.reason), actor }))}`);
  });
}

/** The state with who put it there: "acknowledged by ana until 2026-12-03T18:00:00Z (upstream late)". */
function stateOf(i: IncidentView): string {
  if (i.state === "resolved") return `resolved ${isoTime(i.resolvedAt)} by ${i.resolvedBy ?? "watchdog"}${i.resolution ? ` (${i.resolution})` : ""}`;
  const ack = i.acknowledgement;
  if (i.state === "acknowledged" && ack) return `acknowledged by ${ack.by}${ack.until !== null ? ` until ${isoTime(ack.until)}` : ""} (${ack.reason})`;
  return ack ? `open (snooze by ${ack.by} ended ${isoTime(ack.until)})` : "open";
}

function needReason(reason: string | undefined): string {
  if (!reason?.trim()) throw new UsageError('give --reason "...": every change to an incident is audited');
  return reason;
}

function parsed<T>(flag: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError(`${flag}: ${(error as Error).message}`);
  }
}
