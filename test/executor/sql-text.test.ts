import { describe, expect, it } from "vitest";
import { splitSql } from "../../src/engine/executor/sql-text.ts";

describe("cutting a SQL task's text into statements and parameters", () => {
  it("takes $names out as parameters, outside quotes, comments and dollar-quoted bodies", () => {
    const text = `-- $not_a_param; in a comment
DELETE FROM t WHERE d = $business_date AND note <> 'it''s $5; fine';
/* $nope; */ INSERT INTO t SELECT $business_date, "col$x", $$ body; $y $$, $tag$ $z; $tag$, $run_id;

`;
    const statements = splitSql(text);
    expect(statements.map((s) => s.params)).toEqual([["business_date"], ["business_date", "run_id"]]);
    expect(statements.map((s) => s.line)).toEqual([2, 3]);
    expect(statements[0]!.strings).toEqual(["-- $not_a_param; in a comment\nDELETE FROM t WHERE d = ", " AND note <> 'it''s $5; fine'"]);
    expect(statements[1]!.strings.at(-1)).toBe("");
  });

  it("drops statements that are only blanks or comments, and keeps positional $1 as text", () => {
    expect(splitSql(";\n -- nothing\n;")).toEqual([]);
    expect(splitSql("SELECT $1, x::date")).toEqual([{ strings: ["SELECT $1, x::date"], params: [], line: 1 }]);
  });
});
