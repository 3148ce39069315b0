/**
 * SQL as data: a statement is text parts plus identifiers and values kept apart, so an adapter can
 * quote the identifiers and bind the values in its own dialect. Nothing a caller passes is ever
 * spliced into the text; only `trusted()` fragments are, and those are built inside src/data.
 */
export type SqlValue = string | number | bigint | boolean | null;

export class Ident {
  constructor(readonly name: string) {
    if (name === "" || name.includes("\0")) throw new TypeError(`bad identifier ${JSON.stringify(name)}`);
  }
}

/** What can be bound: a scalar, or a text array (PostgreSQL's unnest of a batch). */
export type BoundValue = SqlValue | readonly (string | null)[];

type Part = BoundValue | Ident | Sql;

export class Sql {
  constructor(
    readonly strings: readonly string[],
    readonly parts: readonly Part[],
  ) {}
}

export function sql(strings: TemplateStringsArray, ...parts: Part[]): Sql {
  return new Sql([...strings], parts);
}

export function ident(name: string): Ident {
  return new Ident(name);
}

/** Text written by src/data itself (keywords, type names from a closed list); never user input. */
export function trusted(text: string): Sql {
  return new Sql([text], []);
}

export function joinSql(items: readonly Part[], separator = ", "): Sql {
  if (items.length === 0) return trusted("");
  const strings = [""];
  for (let i = 1; i < items.length; i++) strings.push(separator);
  strings.push("");
  return new Sql(strings, items);
}

export function identList(names: readonly string[], qualifier?: string): Sql {
  return joinSql(names.map((n) => (qualifier === undefined ? ident(n) : sql`${ident(qualifier)}.${ident(n)}`)));
}

export interface Rendered {
  text: string;
  params: BoundValue[];
}

export interface SqlDialect {
  quoteIdent(name: string): string;
  /** Placeholder text for the n-th bound value, 1-based. */
  placeholder(n: number): string;
}

export function render(statement: Sql, dialect: SqlDialect): Rendered {
  const params: BoundValue[] = [];
  const walk = (q: Sql): string => {
    let text = q.strings[0] ?? "";
    q.parts.forEach((part, i) => {
      if (part instanceof Sql) text += walk(part);
      else if (part instanceof Ident) text += dialect.quoteIdent(part.name);
      else {
        params.push(part);
        text += dialect.placeholder(params.length);
      }
      text += q.strings[i + 1] ?? "";
    });
    return text;
  };
  return { text: walk(statement), params };
}

/** Standard SQL identifier quoting; all three targets accept it. */
export function doubleQuote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
