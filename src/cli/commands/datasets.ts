import type { Command } from "commander";
import { positiveWholeNumber } from "../flags.ts";
import { lazy } from "../lazy.ts";

const actions = () => import("../actions/datasets.ts");

/** `idem datasets list|events|emit`: the datasets pipelines name, their events, and events from outside idem. */
export function registerDatasetCommands(program: Command): void {
  const datasets = program.command("datasets").description("datasets the pipelines name, their events, and events from producers outside idem");
  datasets
    .command("list")
    .description("every dataset the pipelines name: who produces, publishes, waits on and promises it")
    .option("--json", "print as JSON")
    .action(lazy(actions, "listDatasets"));
  datasets
    .command("events [name]")
    .description("the newest dataset events (of one dataset): a run's publication or a producer's event")
    .option("--limit <n>", "how many", positiveWholeNumber, 20)
    .option("--json", "print as JSON")
    .action(lazy(actions, "listDatasetEvents"));
  datasets
    .command("emit <name>")
    .description("say that a dataset is ready for a business date, as a producer outside idem: pipelines that wait on it run as for a publication")
    .requiredOption("--date <YYYY-MM-DD>", "the business date it is ready for")
    .requiredOption("--key <key>", "the delivery's idempotency key: emitted again, nothing is written and the first event is shown")
    .option("--summary <json>", "JSON kept with the event (counts, a file name), at most 64 KiB")
    .option("--reason <text>", "why, for the audit log")
    .option("--json", "print as JSON")
    .action(lazy(actions, "emitDatasetEvent"));
}
