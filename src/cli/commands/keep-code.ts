import type { Command } from "commander";
import { lazy } from "../lazy.ts";

export function registerKeepCodeCommand(program: Command): void {
  program
    .command("keep-code <run>")
    .description("record, audited, that a run not on the latest code finishes on its own code (a clear with --code latest moves it instead)")
    .option("--reason <text>", "why (required)")
    .action(lazy(() => import("../actions/keep-code.ts"), "keepCode"));
}
