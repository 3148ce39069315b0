import type { Command } from "commander";
import { lazy } from "../lazy.ts";

export function registerInitCommand(program: Command): void {
  program
    .command("init [dir]")
    .description("create a project: package.json, idem.config.ts, an example pipeline and its unit test (in an empty or new folder)")
    .action(lazy(() => import("../actions/init.ts"), "init"));
}
