import { readFileSync } from "node:fs";
import { relative, resolve } from "node:path";
import { DataError, DefinitionError } from "../../core/model/errors.ts";
import type { SqlTask, Summary, TaskContext } from "../../core/pipeline/types.ts";
import { Sql, type SqlValue } from "../../data/sql.ts";
import { splitSql } from "./sql-text.ts";

/** The parameters a SQL task may name; all bound as values. */
function parametersOf(ctx: Omit<TaskContext, "signal">): Record<string, SqlValue> {
  return {
    business_date: ctx.businessDate,
    interval_start: ctx.interval.start.toInstant().toString(),
    interval_end: ctx.interval.end.toInstant().toString(),
    run_id: ctx.runId,
    try_number: ctx.tryNumber,
  };
}

/**
 * A SQL task's body, run like a function task (timeout, cancel): every statement in one
 * transaction on the task's connection, the rows they changed as the summary. A check query's
 * rows, or an error the database blames on the data, is a data error; other database errors
 * fail the attempt with the database's message and may be retried.
 */
export async function runSqlTask(task: SqlTask, ctx: Omit<TaskContext, "signal">, projectDir: string): Promise<Summary> {
  const source = task.sql;
  const file = source.file === null ? null : resolve(projectDir, source.file);
  const shownFile = file === null ? null : relative(projectDir, file) || file;
  // Where, as every error of idem says it: "file:line, task id" for a .sql file, "task id" for a statement.
  const several = source.text?.trim().includes("\n") ?? false;
  const at = (line?: number) =>
    shownFile === null ? `task ${task.id}${line && several ? `, line ${line} of its sql` : ""}` : `${line ? `${shownFile}:${line}` : shownFile}, task ${task.id}`;
  const shown = at();
  let text: string;
  try {
    text = source.file === null ? source.text : readFileSync(resolve(projectDir, source.file), "utf8");
  } catch (error) {
    throw new DefinitionError(`${shown}: cannot read the file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  const values = parametersOf(ctx);
  const statements = splitSql(text).map((s) => {
    const unknown = s.params.find((p) => !(p in values));
    if (unknown) throw new DefinitionError(`${at(s.line)}: unknown parameter $${unknown} (known: ${Object.keys(values).map((k) => `$${k}`).join(", ")})`);
    return { line: s.line, sql: new Sql(tracedText(s.strings, ctx.traceparent), s.params.map((p) => values[p]!)) };
  });
  if (statements.length === 0) throw new DefinitionError(`${shown}: no SQL statement`);
  if (task.check && statements.length !== 1) throw new DefinitionError(`${shown}: a check is one query, not ${statements.length} statements`);
  const target = await ctx.connection(task.connection);
  let current = statements[0]!;
  try {
    if (task.check) {
      const rows = await target.query(current.sql);
      if (rows.length > 0) {
        throw new DataError(`${shown}: check found ${rows.length} offending row(s), first ${JSON.stringify(rows[0], (_k, v) => (typeof v === "bigint" ? String(v) : v))}`);
      }
      return { offendingRows: 0 };
    }
    let rowsAffected = 0;
    await target.transaction(async () => {
      for (const statement of statements) {
        current = statement;
        rowsAffected += await target.exec(statement.sql);
      }
    });
    return statements.length === 1 ? { rowsAffected } : { rowsAffected, statements: statements.length };
  } catch (error) {
    if (error instanceof DataError) throw error;
    const explained = target.explainError(error);
    const message = `${at(current.line)}: ${explained?.message ?? (error as Error).message.split("\n")[0]}`;
    if (explained?.isData) throw new DataError(message);
    throw new Error(message);
  }
}

/**
 * While traces are exported, each statement leads with the attempt's trace context as a comment
 * (the sqlcommenter convention), so the database's own logs and traces can be joined to the run's.
 * The value is idem's own hex-and-dash format: nothing in it can end the comment.
 */
function tracedText(strings: readonly string[], traceparent: string | null): readonly string[] {
  if (traceparent === null || !/^[0-9a-f-]+$/.test(traceparent)) return strings;
  return [`/* traceparent='${traceparent}' */ ${strings[0]}`, ...strings.slice(1)];
}
