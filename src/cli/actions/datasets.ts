import { ArgumentError, UsageError } from "../../core/model/errors.ts";
import type { DatasetEvent } from "../../store/port.ts";
import { flagOf } from "../flags.ts";
import { isoTime, printJson, table } from "../format.ts";
import type { Cli } from "../lazy.ts";
import { withEngine } from "../project.ts";

/** The engine's names for what `emit` takes, as its flags. */
const EMIT_FLAGS: Record<string, string> = { businessDate: "--date", idempotencyKey: "--key", summary: "--summary" };

export function listDatasets(cli: Cli, flags: { json?: boolean }) {
  return withEngine(cli, { pipelines: true }, async (engine) => {
    const datasets = engine.datasets();
    if (flags.json) return printJson(datasets);
    if (datasets.length === 0) return console.log("no pipeline names a dataset (produces, publishes, triggerOn or promises)");
    const tasks = (list: { pipelineId: string; taskId: string }[]) => list.map((t) => `${t.pipelineId}.${t.taskId}`).join(", ") || null;
    console.log(table(
      ["dataset", "produced by", "published by", "triggers", "promised by"],
      datasets.map((d) => [d.name, tasks(d.producedBy), tasks(d.publishedBy), d.triggers.join(", ") || null, d.promisedBy.join(", ") || null]),
    ));
  });
}

export function listDatasetEvents(cli: Cli, name: string | undefined, flags: { limit: number; json?: boolean }) {
  return withEngine(cli, { pipelines: false }, async (engine) => {
    const { items } = await engine.datasetEventsPage({ dataset: name, limit: flags.limit });
    if (flags.json) return printJson(items);
    if (items.length === 0) return console.log(name ? `no event of ${name} yet` : "no dataset event yet");
    console.log(table(["id", "at", "dataset", "business date", "from"], items.map((e) => [e.id, isoTime(e.at), e.dataset, e.businessDate, origin(e)])));
  });
}

export function emitDatasetEvent(cli: Cli, name: string, flags: { date: string; key: string; summary?: string; reason?: string; json?: boolean }) {
  let summary: unknown;
  if (flags.summary !== undefined) {
    try {
      summary = JSON.parse(flags.summary);
    } catch (error) {
      throw new UsageError(`--summary: not JSON: ${(error as Error).message}`);
    }
  }
  return withEngine(cli, { pipelines: true }, async (engine, actor) => {
    let result;
    try {
      result = await engine.emitDatasetEvent(name, { businessDate: flags.date, idempotencyKey: flags.key, summary, reason: flags.reason, source: "cli", actor });
    } catch (error) {
      if (error instanceof ArgumentError) throw new UsageError(error.describe((argument) => EMIT_FLAGS[argument] ?? flagOf(argument)));
      throw error;
    }
    const { event, created, ignored } = result;
    if (flags.json) return printJson({ event, created, ignored, audit: result.audit });
    if (created) return console.log(`dataset event ${event.id} recorded: ${event.dataset} ready for ${event.businessDate} (key ${event.idempotencyKey}); pipelines that wait on it take it as a publication`);
    console.log(
      `nothing recorded: key ${event.idempotencyKey} of ${event.dataset} was first used at ${isoTime(event.at)} (event ${event.id}, ${event.businessDate}, by ${event.actor} via ${event.source})` +
        (ignored.length ? `; this call's ${ignored.map((f) => EMIT_FLAGS[f]).join(" and ")} ${ignored.length > 1 ? "differ from the first and were" : "differs from the first and was"} ignored` : ""),
    );
  });
}

function origin(e: DatasetEvent): string {
  return e.source === "run" ? `${e.runId} (task ${e.taskId})` : `${e.source} by ${e.actor}, key ${e.idempotencyKey}`;
}
