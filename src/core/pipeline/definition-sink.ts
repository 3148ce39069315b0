import type { DefinitionError } from "../model/errors.ts";
import type { Pipeline } from "./types.ts";

/**
 * Where `pipeline()` hands its problems while a loader imports a pipeline file, instead of
 * throwing: the file then goes on to define its other pipelines, and the loader reports the
 * problems of all of them at once. Without a sink (the engine API, a unit test importing a
 * file), `pipeline()` throws as usual.
 *
 * A global slot under a registered symbol, because the loader and the `idem` a pipeline file
 * imports may be two copies of this module. The loader imports one file at a time, so whatever
 * reaches the sink came from that file.
 */
const SINK = Symbol.for("idem.definitionSink");

/**
 * A pipeline with problems, as far as it could be read: its tasks that have none. A loader
 * checks these against the project too (pools, connections), so no problem waits for the next run.
 */
export type PartialPipeline = Pick<Pipeline, "id" | "tasks">;

export type DefinitionSink = (problems: readonly DefinitionError[], partial: PartialPipeline) => void;

export function currentDefinitionSink(): DefinitionSink | undefined {
  return (globalThis as { [SINK]?: DefinitionSink })[SINK];
}

/** Runs `fn` (an import of one file) with `sink` taking the problems of the pipelines it defines. */
export async function withDefinitionSink<T>(sink: DefinitionSink, fn: () => Promise<T>): Promise<T> {
  const slot = globalThis as { [SINK]?: DefinitionSink };
  const previous = slot[SINK];
  slot[SINK] = sink;
  try {
    return await fn();
  } finally {
    slot[SINK] = previous;
  }
}

/** What `pipeline()` returns in place of a pipeline with problems while a sink takes them: no loader takes it. */
export interface InvalidPipeline {
  readonly kind: "idem.invalid-pipeline";
  readonly id: string;
}
