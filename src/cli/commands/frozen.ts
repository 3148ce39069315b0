import type { Command } from "commander";
import { positiveWholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

/** `idem frozen <pipeline>`: the frozen periods that apply, with owner and reason, and how they changed. */
export function registerFrozenCommand(program: Command): void {
  program
    .command("frozen <pipeline>")
    .description("the frozen periods of a pipeline (its own and the project's) with owner and reason, and the recorded changes to them")
    .option("--limit <n>", "how many changes", positiveWholeNumber, 10)
    .option("--json", "print as JSON")
    .action(lazy(() => import("../actions/frozen.ts"), "frozen"));
}
