import { DataError, DefinitionError } from "../core/model/errors.ts";
import { sourceTotals } from "./sources/source-queries.ts";
import { sourceSpec, type Source, type SourceSpec } from "./sources/source.ts";
import { describePredicate, predicateSql, type Predicate } from "./predicate.ts";
import { ident, identList, joinSql, sql, trusted, type Sql, type SqlValue } from "./sql.ts";
import type { Row, Target } from "./target.ts";

type Columns = string | readonly string[];

/**
 * Declarative checks on staged rows. Each one either compares a total with the source's, or
 * describes the offending rows, so a failure can show the first few of them.
 */
export type Check =
  /** Staged rows as many as the load's source has (or as `against` has, e.g. the raw file). */
  | { rowCountEqualsSource: true; against?: Source }
  | { notNull: Columns }
  | { nonNegative: Columns }
  | { uniqueKey: Columns }
  | { acceptedValues: { column: string; values: readonly SqlValue[] } }
  /** The sum of a staged column equals the source's sum of it (or of `sourceColumn`): difference 0. */
  | { reconcileSum: string; sourceColumn?: string; against?: Source }
  /** `offending` receives the staged rows as a relation and returns a query for the offending rows. */
  | { custom: string; offending: (staged: Sql) => Sql };

export interface CheckScope {
  target: Target;
  /** The staged rows, as something that can follow FROM. */
  relation: Sql;
  /** What is being checked, for messages: `orders_daily (order_date = 2026-09-01)`. */
  label: string;
  /** The load's source, for checks that compare with it. */
  source?: Source;
}

/** A check scope as the loaders pass it: the load's source already read. */
export interface StagedScope extends Omit<CheckScope, "source"> {
  source?: SourceSpec;
}

export interface CheckFailure {
  check: string;
  message: string;
  offendingRows: number | null;
  sample: Row[];
}

const SAMPLE = 3;

export function checkName(check: Check): string {
  const list = (c: Columns) => (typeof c === "string" ? c : c.join(", "));
  if ("rowCountEqualsSource" in check) return "rowCountEqualsSource";
  if ("notNull" in check) return `notNull(${list(check.notNull)})`;
  if ("nonNegative" in check) return `nonNegative(${list(check.nonNegative)})`;
  if ("uniqueKey" in check) return `uniqueKey(${list(check.uniqueKey)})`;
  if ("acceptedValues" in check) return `acceptedValues(${check.acceptedValues.column})`;
  if ("reconcileSum" in check) return `reconcileSum(${check.reconcileSum})`;
  return check.custom;
}

/** Runs every check; throws one DataError naming the first failure (and counting the others). */
export function runChecks(scope: CheckScope, checks: readonly Check[]): Promise<void> {
  return checkStaged({ ...scope, source: scope.source && sourceSpec(scope.source, scope.label) }, checks);
}

/** `runChecks` for a loader, which has read its source already. */
export async function checkStaged(scope: StagedScope, checks: readonly Check[]): Promise<void> {
  const failures: CheckFailure[] = [];
  for (const check of checks) {
    const failure = await runCheck(scope, check);
    if (failure) failures.push(failure);
  }
  const first = failures[0];
  if (!first) return;
  const more = failures.length > 1 ? ` (and ${failures.length - 1} more failed: ${failures.slice(1).map((f) => f.check).join(", ")})` : "";
  throw new DataError(`${scope.label}: check ${first.check} failed: ${first.message}${more}`, { failures });
}

async function runCheck(scope: StagedScope, check: Check): Promise<CheckFailure | null> {
  const name = checkName(check);
  const { target, relation } = scope;
  const rel = sql`${relation} AS ${ident("staged")}`;
  const columns = (c: Columns) => {
    const cols = typeof c === "string" ? [c] : [...c];
    if (cols.length === 0) throw new DefinitionError(`check ${name} names no columns`);
    return cols;
  };
  if ("rowCountEqualsSource" in check || "reconcileSum" in check) {
    const source = check.against ? sourceSpec(check.against, `${scope.label}: check ${name} against`) : scope.source;
    if (!source) throw new DefinitionError(`check ${name} needs the load's source`);
    const staged = await target.query(
      "reconcileSum" in check
        ? sql`SELECT count(*) AS n, sum(${ident(check.reconcileSum)}) AS s FROM ${rel}`
        : sql`SELECT count(*) AS n FROM ${rel}`,
    );
    const stagedRows = Number(staged[0]?.n ?? 0);
    if ("rowCountEqualsSource" in check) {
      const totals = await sourceTotals(target, source, []);
      if (stagedRows === totals.rows) return null;
      return { check: name, message: `${stagedRows} rows, the source has ${totals.rows}`, offendingRows: null, sample: [] };
    }
    const sourceColumn = check.sourceColumn ?? check.reconcileSum;
    const totals = await sourceTotals(target, source, [sourceColumn]);
    const stagedSum = staged[0]?.s == null ? null : Number(staged[0].s);
    const sourceSum = totals.sums.get(sourceColumn) ?? null;
    if (sumsEqual(stagedSum, sourceSum)) return null;
    const diff = stagedSum !== null && sourceSum !== null ? ` (difference ${round(stagedSum - sourceSum)})` : "";
    return { check: name, message: `sum(${check.reconcileSum}) is ${String(stagedSum)}, ${String(sourceSum)} in the source${diff}`, offendingRows: null, sample: [] };
  }
  let offending: Sql;
  if ("notNull" in check) {
    offending = sql`SELECT * FROM ${rel} WHERE ${joinSql(columns(check.notNull).map((c) => sql`${ident(c)} IS NULL`), " OR ")}`;
  } else if ("nonNegative" in check) {
    offending = sql`SELECT * FROM ${rel} WHERE ${joinSql(columns(check.nonNegative).map((c) => sql`${ident(c)} < 0`), " OR ")}`;
  } else if ("uniqueKey" in check) {
    const key = columns(check.uniqueKey);
    offending = sql`SELECT ${identList(key)}, count(*) AS ${ident("copies")} FROM ${rel} GROUP BY ${identList(key)} HAVING count(*) > 1`;
  } else if ("acceptedValues" in check) {
    const { column, values } = check.acceptedValues;
    offending = values.length === 0
      ? sql`SELECT * FROM ${rel} WHERE ${ident(column)} IS NOT NULL`
      : sql`SELECT * FROM ${rel} WHERE ${ident(column)} IS NOT NULL AND ${ident(column)} NOT IN (${joinSql([...values])})`;
  } else {
    offending = check.offending(relation);
  }
  const counted = await target.query(sql`SELECT count(*) AS n FROM (${offending}) AS ${ident("offending")}`);
  const n = Number(counted[0]?.n ?? 0);
  if (n === 0) return null;
  const sample = await target.query(sql`SELECT * FROM (${offending}) AS ${ident("offending")} LIMIT ${trusted(String(SAMPLE))}`);
  const rows = n === 1 ? "1 offending row" : `${n} offending rows`;
  return { check: name, message: `${rows}, e.g. ${sample.map((r) => JSON.stringify(r)).join(" ")}`, offendingRows: n, sample };
}

// Sums of decimals are exact in each engine but may come back as text or a double; compare with
// a tolerance far below a cent so a real difference is never hidden and float noise never fails.
function sumsEqual(a: number | null, b: number | null): boolean {
  if (a === null || b === null) return a === b;
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}

function round(n: number): number {
  return Math.round(n * 1e9) / 1e9;
}

/**
 * Runs checks on rows already published (a downstream "check" task): the table's rows matching
 * `where`, compared with `source` where a check needs it.
 */
export async function checkTable(options: { target: Target; table: string; where?: Predicate; checks: readonly Check[]; source?: Source }): Promise<void> {
  const { target, table, where } = options;
  const relation = where ? sql`(SELECT * FROM ${ident(table)} WHERE ${predicateSql(where)})` : sql`${ident(table)}`;
  const label = where ? `${table} (${describePredicate(where)})` : table;
  await runChecks({ target, relation, label, ...(options.source ? { source: options.source } : {}) }, options.checks);
}
