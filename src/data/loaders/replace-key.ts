import { DefinitionError } from "../../core/model/errors.ts";
import type { WriteContext } from "../context.ts";
import type { Predicate } from "../predicate.ts";
import type { Source } from "../sources/source.ts";
import type { LoadOptions, WriteSummary } from "./common.ts";
import { replaceWhere } from "./replace-where.ts";

export interface ReplaceKeyOptions extends LoadOptions {
  /** The column that holds each row's key; the loader fills it, the source must not carry it. */
  keyColumn: string;
  /** The key this write owns; default the mapped instance's key (`context.mapKey`). */
  key?: string;
  /** Narrows what the key owns, e.g. `{ column: "landed_on", equals: ctx.businessDate }` when keys repeat across days. */
  scope?: Predicate;
}

/**
 * Loads one mapped item (one landed file, one customer) as the rows of its key: in one
 * transaction the rows whose key column equals the key are replaced by the source's rows, each
 * tagged with the key. Other keys' rows are never touched, and running the same key again (a
 * retry, a rerun, a backfill) replaces the same rows, so each key is a day-like unit of
 * idempotency. The write's batch id is derived from (run, task, key, try): a write whose
 * transaction committed but whose attempt was lost is not applied twice within that try.
 */
export async function replaceKey(options: ReplaceKeyOptions): Promise<WriteSummary> {
  const { keyColumn, table, context } = options;
  const key = options.key ?? context.mapKey ?? null;
  if (typeof key !== "string" || key === "") {
    throw new DefinitionError(`${table}: replaceKey needs a key: run it in a mapped task (ctx.mapKey, through writeContextFrom(ctx)) or pass key`);
  }
  const where: Predicate = options.scope ? { all: [{ column: keyColumn, equals: key }, options.scope] } : { column: keyColumn, equals: key };
  const { keyColumn: _k, key: _key, scope: _s, ...load } = options;
  return replaceWhere({
    ...load,
    columns: withKeyColumn(options, keyColumn),
    source: taggedSource(options.source, keyColumn, key, table),
    context: { ...context, mapKey: key, batchId: context.batchId ?? keyBatchId(context, key) },
    where,
  });
}

/** The batch id of one key's write in one try: `run/task[key]#try`. */
export function keyBatchId(context: WriteContext, key: string): string {
  return `${context.runId}/${context.taskId}[${key}]#${context.tryNumber}`;
}

function taggedSource(source: Source, keyColumn: string, key: string, table: string): Source {
  const constants = (source as { constants?: Readonly<Record<string, unknown>> }).constants;
  if (constants && keyColumn in constants) {
    throw new DefinitionError(`${table}: source constant ${keyColumn} is replaceKey's key column; the loader fills it with the key`);
  }
  return { ...source, constants: { ...constants, [keyColumn]: key } } as Source;
}

function withKeyColumn(options: ReplaceKeyOptions, keyColumn: string): LoadOptions["columns"] {
  const declared = options.columns;
  if (!declared) return undefined;
  if (Array.isArray(declared)) {
    return declared.some((c) => c.name === keyColumn) ? declared : [...declared, { name: keyColumn, type: "text" }];
  }
  const record = declared as Readonly<Record<string, string>>;
  return keyColumn in record ? declared : ({ ...record, [keyColumn]: "text" } as LoadOptions["columns"]);
}
