import type { Command } from "commander";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/incidents.ts");

/** `idem incidents [ack|snooze|resolve]`: what the checker opened, and a person's answer to it (audited). */
export function registerIncidentCommands(program: Command): void {
  const incidents = program
    .command("incidents")
    .description("incidents opened by the freshness checker (late, SLA missed, did not run, failed runs, scheduler down); ack, snooze or resolve one")
    .option("--all", "resolved ones too")
    .option("--json", "print as JSON")
    .action(lazy(actions, "incidents"));
  incidents
    .command("ack <key>")
    .alias("acknowledge")
    .description("acknowledge an incident: someone is on it (audited; it stays acknowledged until resolved)")
    .option("--reason <text>", "why (required)")
    .action(lazy(actions, "acknowledge"));
  incidents
    .command("snooze <key>")
    .description("acknowledge an incident for a while: it is open again then, unless resolved (audited)")
    .option("--for <duration>", "how long, e.g. 30m, 4h, 1d")
    .option("--until <instant>", "until when (ISO instant, or YYYY-MM-DD[THH:MM] in UTC)")
    .option("--reason <text>", "why (required)")
    .action(lazy(actions, "snooze"));
  incidents
    .command("resolve <key>")
    .description("resolve an incident by hand; its notifiers hear of it (audited)")
    .option("--reason <text>", "why (required)")
    .action(lazy(actions, "resolve"));
}
