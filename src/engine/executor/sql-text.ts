/**
 * A SQL task's text cut into statements, each with its named parameters (`$business_date`)
 * taken out of the text, so they are bound by the driver and never pasted in. Quotes, quoted
 * identifiers, comments and PostgreSQL dollar-quoted bodies are skipped whole: a `$` or `;`
 * inside them is text.
 */
export interface SqlStatementText {
  /** The text around the parameters: strings.length === params.length + 1. */
  strings: string[];
  params: string[];
  /** 1-based line of the statement's first character of code, for messages. */
  line: number;
}

const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const DOLLAR_TAG = /\$([A-Za-z_][A-Za-z0-9_]*)?\$/y;

export function splitSql(text: string): SqlStatementText[] {
  const statements: SqlStatementText[] = [];
  let strings: string[] = [];
  let params: string[] = [];
  let buffer = "";
  let line = 1;
  let startLine: number | null = null;
  const finish = () => {
    if (startLine !== null) statements.push({ strings: [...strings, buffer], params, line: startLine });
    strings = [];
    params = [];
    buffer = "";
    startLine = null;
  };
  let i = 0;
  const take = (end: number) => {
    const piece = text.slice(i, end);
    for (const c of piece) if (c === "\n") line++;
    buffer += piece;
    i = end;
  };
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === "-" && next === "-") {
      const end = text.indexOf("\n", i);
      take(end === -1 ? text.length : end);
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      take(end === -1 ? text.length : end + 2);
    } else if (c === "'" || c === '"') {
      startLine ??= line;
      let end = i + 1;
      for (;;) {
        end = text.indexOf(c, end);
        if (end === -1) { end = text.length; break; }
        if (text[end + 1] === c) { end += 2; continue; } // '' inside a string
        end += 1;
        break;
      }
      take(end);
    } else if (c === "$") {
      startLine ??= line;
      DOLLAR_TAG.lastIndex = i;
      const tag = DOLLAR_TAG.exec(text);
      NAME.lastIndex = i + 1;
      const name = NAME.exec(text);
      if (tag) {
        const close = text.indexOf(tag[0], i + tag[0].length);
        take(close === -1 ? text.length : close + tag[0].length);
      } else if (name) {
        strings.push(buffer);
        params.push(name[0]);
        buffer = "";
        i = i + 1 + name[0].length;
      } else take(i + 1);
    } else if (c === ";") {
      i++;
      finish();
    } else {
      if (!/\s/.test(c)) startLine ??= line;
      take(i + 1);
    }
  }
  finish();
  return statements;
}
