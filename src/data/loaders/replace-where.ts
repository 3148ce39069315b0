import { checkStaged } from "../checks.ts";
import { guardFrozen } from "../frozen.ts";
import { claimBatch, recordHistory } from "../history.ts";
import { loadSource } from "../sources/load-source.ts";
import { sampleSource } from "../sources/source-queries.ts";
import { sourceSpec } from "../sources/source.ts";
import { describePredicate, predicateColumns, predicateDateRanges, predicateSql, rowMatches, type Predicate } from "../predicate.ts";
import { ident, sql } from "../sql.ts";
import { contextDates, guardStagedDates, NOTHING, outsideError, prepareTable, requireColumns, stepper, summary, type LoadOptions, type WriteSummary } from "./common.ts";

export interface ReplaceWhereOptions extends LoadOptions {
  /** The rows this load owns: all of them are replaced, and every new row must match. */
  where: Predicate;
}

/**
 * Replaces the rows matching `where` with the source's rows, in one transaction. The open
 * transaction is the staging area: old rows are deleted and new ones inserted inside it, the
 * staged rows are verified against `where` and checked, and only then is anything committed.
 * Readers see the old rows until the commit and the new ones after it, never a mix.
 */
export async function replaceWhere(options: ReplaceWhereOptions): Promise<WriteSummary> {
  const { target, table, where, context } = options;
  const predicate = describePredicate(where);
  const label = `${table} (${predicate})`;
  const now = options.now ?? (() => new Date());
  const step = stepper(options);
  const source = sourceSpec(options.source, label);
  let frozenOverride = guardFrozen(label, [...predicateDateRanges(where), ...contextDates(context)], options.frozen, options.openFrozen);
  const columns = await prepareTable(options, source);
  requireColumns(table, columns, predicateColumns(where), `replaceWhere on ${predicate}`);
  const owned = predicateSql(where);

  return target.transaction(async () => {
    const at = now();
    if (!(await claimBatch(target, table, context, at))) {
      return summary(table, "replaceWhere", predicate, 0, NOTHING, null, `batch ${context.batchId} already applied`);
    }
    const deleted = await target.exec(sql`DELETE FROM ${ident(table)} WHERE ${owned}`);
    await step("deleted");
    const staged = await loadSource(target, table, columns, source, (rows) => step("staging", rows), options.batchRows, table, context);
    await step("staged", staged);

    const matching = Number((await target.query(sql`SELECT count(*) AS n FROM ${ident(table)} WHERE ${owned}`))[0]?.n ?? 0);
    if (matching !== staged) {
      const sample = await sampleSource(target, source, sql`(${predicateSql(where, "src")}) IS NOT TRUE`, (row) => !rowMatches(row, where));
      throw outsideError(label, staged - matching, predicate, sample);
    }
    const relation = sql`(SELECT * FROM ${ident(table)} WHERE ${owned})`;
    frozenOverride = (await guardStagedDates(options, label, relation)) ?? frozenOverride;
    await checkStaged({ target, relation, label, source }, options.checks ?? []);
    await step("checked");

    const counts = { deleted, inserted: staged, updated: 0, unchanged: 0 };
    await recordHistory(target, { table, operation: "replaceWhere", predicate, counts, context, frozenOverride, at });
    return summary(table, "replaceWhere", predicate, staged, counts, frozenOverride);
  }).then(async (result) => {
    await step("committed");
    return result;
  });
}
