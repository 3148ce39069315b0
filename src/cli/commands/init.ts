import type { Command } from "commander";
import { lazy } from "../lazy.ts";

export function registerInitCommand(program: Command): void {
  program
    .command("init [dir]")
    .description("make a project: idem.config.ts, an example pipeline, its unit test and tsconfig.json; adopts the folder's package.json (says each change) or writes one; never overwrites a file")
    .action(lazy(() => import("../actions/init.ts"), "init"));
}
