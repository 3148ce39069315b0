import type { Command } from "commander";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/watermarks.ts");

export function registerWatermarksCommands(program: Command): void {
  const watermarks = program
    .command("watermarks")
    .description("the watermarks incremental loads saved, per pipeline and task (subcommand: set)")
    .argument("[pipeline]", "only this pipeline's")
    .option("--json", "print as JSON")
    .action(lazy(actions, "list"));
  watermarks
    .command("set <pipeline> <key> <value>")
    .description("set a task's watermark by hand, to load again from an earlier point (audited; refused while a live run owns it)")
    .option("--reason <text>", "why (required)")
    .action(lazy(actions, "set"));
}
