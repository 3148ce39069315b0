import { DefinitionError } from "../../core/model/errors.ts";
import { checkStaged, type Check } from "../checks.ts";
import { guardFrozen } from "../frozen.ts";
import { claimBatch, recordHistory, type Operation } from "../history.ts";
import { loadError, loadSource } from "../sources/load-source.ts";
import { sampleSource } from "../sources/source-queries.ts";
import { sourceSpec } from "../sources/source.ts";
import { describePredicate, predicateColumns, predicateDateRanges, predicateSql, rowMatches, type Predicate } from "../predicate.ts";
import { ident, identList, joinSql, sql } from "../sql.ts";
import { contextDates, guardStagedDates, NOTHING, outsideError, prepareTable, requireColumns, stagingName, stepper, summary, type LoadOptions, type WriteSummary } from "./common.ts";

export interface MergeByKeyOptions extends LoadOptions {
  key: string | readonly string[];
  /**
   * Rows of the table (within `scope`) whose key is not in the source: keep them, or delete them.
   * No default: a merge that silently keeps them keeps stale rows forever.
   */
  whenMissingFromSource: "keep" | "delete";
  /** The part of the table this source speaks for; staged rows must all fall inside it. */
  scope?: Predicate;
  /** For incremental loads: the staged rows' maximum of this column is reported. */
  watermarkColumn?: string;
}

export interface MergeSummary extends WriteSummary {
  /** max(watermarkColumn) over the staged rows, when asked for. */
  stagedMaximum?: string | number | null;
}

/**
 * Upserts the source's rows on `key`. Rows are staged in a temporary table and checked first;
 * then, in one transaction, rows whose values changed (by row hash or null-safe comparison, see
 * Target.rowsDiffer) are updated, new keys inserted, and (if chosen) rows missing from the
 * source deleted. Unchanged rows are not rewritten.
 */
export async function mergeByKey(options: MergeByKeyOptions, operation: Operation = "mergeByKey"): Promise<MergeSummary> {
  const { target, table, context, scope } = options;
  const key = typeof options.key === "string" ? [options.key] : [...options.key];
  if (key.length === 0) throw new DefinitionError(`mergeByKey into ${table}: the key names no columns`);
  if (options.whenMissingFromSource !== "keep" && options.whenMissingFromSource !== "delete") {
    throw new DefinitionError(`mergeByKey into ${table}: whenMissingFromSource must be "keep" or "delete"`);
  }
  const predicate = `key (${key.join(", ")})${scope ? ` within ${describePredicate(scope)}` : ""}`;
  const label = scope ? `${table} (${describePredicate(scope)})` : table;
  const now = options.now ?? (() => new Date());
  const step = stepper(options);
  const source = sourceSpec(options.source, label);
  let frozenOverride = guardFrozen(label, [...(scope ? predicateDateRanges(scope) : []), ...contextDates(context)], options.frozen, options.openFrozen);
  const columns = await prepareTable(options, source);
  requireColumns(table, columns, [...key, ...(scope ? predicateColumns(scope) : []), ...(options.watermarkColumn ? [options.watermarkColumn] : [])], `mergeByKey into ${table}`);
  const names = columns.map((c) => c.name);
  const others = names.filter((n) => !key.includes(n));
  const stage = stagingName();
  const t = ident(table);
  const s = ident("s");
  const keyMatch = joinSql(key.map((k) => sql`${t}.${ident(k)} = ${s}.${ident(k)}`), " AND ");

  await target.exec(sql`CREATE TEMP TABLE ${ident(stage)} AS SELECT * FROM ${t} LIMIT 0`);
  try {
    const staged = await loadSource(target, stage, columns, source, (rows) => step("staging", rows), options.batchRows, table, context);
    await step("staged", staged);
    await target.analyze(stage);
    const relation = sql`${ident(stage)}`;
    if (scope) {
      const outside = Number((await target.query(sql`SELECT count(*) AS n FROM ${relation} WHERE (${predicateSql(scope)}) IS NOT TRUE`))[0]?.n ?? 0);
      if (outside > 0) {
        const sample = await sampleSource(target, source, sql`(${predicateSql(scope, "src")}) IS NOT TRUE`, (row) => !rowMatches(row, scope));
        throw outsideError(label, outside, describePredicate(scope), sample);
      }
    }
    frozenOverride = (await guardStagedDates(options, label, relation)) ?? frozenOverride;
    const keyChecks: Check[] = [{ notNull: key }, { uniqueKey: key }];
    await checkStaged({ target, relation, label, source }, [...keyChecks, ...(options.checks ?? [])]);
    const stagedMaximum = options.watermarkColumn
      ? ((await target.query(sql`SELECT max(${ident(options.watermarkColumn)}) AS m FROM ${relation}`))[0]?.m as string | number | null) ?? null
      : undefined;
    await step("checked");

    const result = await target.transaction(async () => {
      const at = now();
      if (!(await claimBatch(target, table, context, at))) {
        return summary(table, operation, predicate, staged, NOTHING, null, `batch ${context.batchId} already applied`);
      }
      const updated = others.length === 0 ? 0 : await target.exec(sql`
        UPDATE ${t} SET ${joinSql(others.map((c) => sql`${ident(c)} = ${s}.${ident(c)}`))}
        FROM ${ident(stage)} AS ${s}
        WHERE ${keyMatch} AND ${target.rowsDiffer(table, "s", others)}`);
      const inserted = await target.exec(sql`
        INSERT INTO ${t} (${identList(names)}) SELECT ${identList(names, "s")} FROM ${ident(stage)} AS ${s}
        WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE ${keyMatch})`);
      await step("written");
      let deleted = 0;
      if (options.whenMissingFromSource === "delete") {
        deleted = await target.exec(sql`
          DELETE FROM ${t} WHERE ${scope ? predicateSql(scope, table) : sql`TRUE`}
            AND NOT EXISTS (SELECT 1 FROM ${ident(stage)} AS ${s} WHERE ${keyMatch})`);
        await step("deleted");
      }
      const counts = { deleted, inserted, updated, unchanged: staged - inserted - updated };
      await recordHistory(target, { table, operation, predicate, counts, context, frozenOverride, at });
      return summary(table, operation, predicate, staged, counts, frozenOverride);
    }).catch((error: unknown) => {
      throw loadError(target, table, source, error, "merging", context);
    });
    await step("committed");
    return stagedMaximum === undefined ? result : { ...result, stagedMaximum };
  } finally {
    await target.dropTable(stage).catch(() => {});
  }
}
