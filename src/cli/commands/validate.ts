import type { Command } from "commander";
import { lazy } from "../lazy.ts";

export function registerValidateCommand(program: Command): void {
  program
    .command("validate")
    .description("load the config and every pipeline; report every problem, one line each")
    .option("--json", "print as JSON")
    .action(lazy(() => import("../actions/validate.ts"), "validate"));
}
