import type { Command } from "commander";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/freshness.ts");

/** freshness, incidents, health: are the promised tables fresh, and is anyone watching? */
export function registerFreshnessCommands(program: Command): void {
  program
    .command("freshness")
    .description("per promised dataset: newest published business date, status against its deadline, the last seven days")
    .option("--json", "print as JSON")
    .action(lazy(actions, "freshness"));

  program
    .command("incidents")
    .description("incidents opened by the freshness checker (late, SLA missed, did not run, failed runs)")
    .option("--all", "resolved ones too")
    .option("--json", "print as JSON")
    .action(lazy(actions, "incidents"));

  program
    .command("health")
    .description("is the scheduler (and so the freshness checker) alive? exit 1 when not")
    .option("--json", "print as JSON")
    .action(lazy(actions, "health"));
}
