import type { Command } from "commander";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/freshness.ts");

/** freshness, health: are the promised tables fresh, and is anyone watching? */
export function registerFreshnessCommands(program: Command): void {
  program
    .command("freshness")
    .description("per promised dataset: newest published business date, status against its deadline, the last seven days")
    .option("--json", "print as JSON")
    .action(lazy(actions, "freshness"));

  program
    .command("health")
    .description("who runs the freshness checker and how fresh its last pass is, and whether a scheduler leads; exit 1 when either is down")
    .option("--json", "print as JSON")
    .action(lazy(actions, "health"));
}
