import { DefinitionError } from "../../core/model/errors.ts";
import { checkStaged } from "../checks.ts";
import { guardFrozen } from "../frozen.ts";
import { claimBatch, recordHistory } from "../history.ts";
import { loadError, loadSource } from "../sources/load-source.ts";
import { sourceSpec } from "../sources/source.ts";
import { ident, identList, sql } from "../sql.ts";
import { contextDates, guardStagedDates, NOTHING, prepareTable, stagingName, stepper, summary, type LoadOptions, type WriteSummary } from "./common.ts";

/**
 * Appends the source's rows. It owns no rows, so it replaces nothing: run twice, it writes twice.
 * With a batch id in the context it is applied once (see batchSink); without one, it is the
 * write the other loaders exist to avoid, kept for logs and for showing the difference.
 */
export async function plainAppend(options: LoadOptions): Promise<WriteSummary> {
  const { target, table, context } = options;
  const now = options.now ?? (() => new Date());
  const step = stepper(options);
  const source = sourceSpec(options.source, table);
  let frozenOverride = guardFrozen(table, contextDates(context), options.frozen, options.openFrozen);
  const columns = await prepareTable(options, source);
  const names = columns.map((c) => c.name);
  const stage = stagingName();
  await target.exec(sql`CREATE TEMP TABLE ${ident(stage)} AS SELECT * FROM ${ident(table)} LIMIT 0`);
  try {
    const staged = await loadSource(target, stage, columns, source, (rows) => step("staging", rows), options.batchRows, table, context);
    await step("staged", staged);
    frozenOverride = (await guardStagedDates(options, table, sql`${ident(stage)}`)) ?? frozenOverride;
    await checkStaged({ target, relation: sql`${ident(stage)}`, label: table, source }, options.checks ?? []);
    await step("checked");
    const result = await target.transaction(async () => {
      const at = now();
      if (!(await claimBatch(target, table, context, at))) {
        return summary(table, "append", null, staged, NOTHING, null, `batch ${context.batchId} already applied`);
      }
      const inserted = await target.exec(sql`INSERT INTO ${ident(table)} (${identList(names)}) SELECT ${identList(names)} FROM ${ident(stage)}`);
      await step("written");
      const counts = { ...NOTHING, inserted };
      await recordHistory(target, { table, operation: "append", predicate: null, counts, context, frozenOverride, at });
      return summary(table, "append", null, staged, counts, frozenOverride);
    }).catch((error: unknown) => {
      throw loadError(target, table, source, error, "appending", context);
    });
    await step("committed");
    return result;
  } finally {
    await target.dropTable(stage).catch(() => {});
  }
}

/**
 * An append applied exactly once per batch id: the id is claimed in the same transaction as the
 * rows, so a retry after a lost acknowledgement (the commit happened, the caller never heard)
 * changes nothing.
 */
export async function batchSink(options: LoadOptions): Promise<WriteSummary> {
  if (!options.context.batchId) throw new DefinitionError(`batchSink into ${options.table}: the write context has no batchId`);
  return plainAppend(options);
}
