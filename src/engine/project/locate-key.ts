/**
 * The line of a key in a pipeline file's source text: where `pipeline(id, options, tasks)` says
 * `retry: 3` for task `load`, the line of `retry`. Definition problems carry the key they are
 * about as a path (`["tasks", "load", "retry"]`); this turns it into a line by reading the text,
 * not by running anything. It finds the call by the position the error's stack gives (source
 * maps make it the original file's), else by the pipeline's id written as a string; follows the
 * arguments through object and array literals and through a `const` of the same file that holds
 * one; and stops at the deepest part of the path it found (the task, else the call), so a
 * pipeline built by code still gets the line of what the text shows of it.
 */
export interface CallSite {
  line: number;
  column: number;
}

export function locateKey(source: string, key: readonly string[], where: { call?: CallSite; pipelineId?: string }): number | undefined {
  const tokens = tokenize(source);
  const open = findCall(tokens, source, where);
  if (open === undefined) return undefined;
  let line = tokens[open]!.line;
  const args = splitList(tokens, open);
  const [head, ...rest] = key;
  const argument = head === "options" ? args[1] : head === "tasks" ? args[2] : undefined;
  if (!argument) return line;
  return descend(tokens, literalAt(tokens, argument.start), rest, line, head === "tasks");
}

/**
 * The line of a key of idem.config.ts (`["connections", "wh", "pasword"]`): the same walk from
 * what the file exports as default (an object, `defineConfig({...})`, or a `const` holding one).
 */
export function locateConfigKey(source: string, key: readonly string[]): number | undefined {
  const tokens = tokenize(source);
  const at = tokens.findIndex((t, k) => t.text === "export" && tokens[k + 1]?.text === "default");
  if (at === -1) return undefined;
  let start = at + 2;
  if (tokens[start]?.kind === "name" && tokens[start + 1]?.text === "(") start += 2;
  return descend(tokens, literalAt(tokens, start), key, tokens[at]!.line, false);
}

/** Follows `path` from the literal at `node`, returning the line of the deepest key found (else `line`). */
function descend(tokens: Token[], node: number | undefined, path: readonly string[], line: number, taskList: boolean): number {
  for (const [depth, name] of path.entries()) {
    if (node === undefined) break;
    const list = tokens[node]!.text === "[";
    const found = list && depth === 0 && taskList ? elementWithId(tokens, node, name) : list ? elementAt(tokens, node, Number(name)) : propertyOf(tokens, node, name);
    if (!found) break;
    line = found.line;
    node = literalAt(tokens, found.valueStart);
  }
  return line;
}

/** The element at `index` of the array literal at `open`. */
function elementAt(tokens: Token[], open: number, index: number): { line: number; valueStart: number } | undefined {
  const item = Number.isInteger(index) ? splitList(tokens, open)[index] : undefined;
  return item && { line: tokens[item.start]!.line, valueStart: item.start };
}

interface Token {
  kind: "name" | "string" | "number" | "punct";
  text: string;
  /** For strings: the value, quotes and escapes removed (approximately: enough to compare ids). */
  value: string;
  line: number;
  offset: number;
}

/** A tokenizer of what matters here: names, strings, brackets and punctuation; comments, template text and regular expressions skipped. */
function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  // What each open `{` was: a brace of the code, or the start of a template's `${`.
  const braces: ("code" | "template")[] = [];
  let line = 1;
  let i = 0;
  const push = (kind: Token["kind"], text: string, value: string, at: number, atLine: number) => tokens.push({ kind, text, value, line: atLine, offset: at });
  const lastSignificant = () => tokens[tokens.length - 1];
  const scanTemplate = () => {
    // from just after "`" or a template's closing "}", to the closing "`" or the next "${"
    while (i < source.length) {
      const c = source[i]!;
      if (c === "\\") i += 2;
      else if (c === "`") {
        i++;
        return;
      } else if (c === "$" && source[i + 1] === "{") {
        braces.push("template");
        i += 2;
        return;
      } else {
        if (c === "\n") line++;
        i++;
      }
    }
  };
  while (i < source.length) {
    const c = source[i]!;
    if (c === "\n") {
      line++;
      i++;
    } else if (/\s/.test(c)) i++;
    else if (c === "/" && source[i + 1] === "/") {
      while (i < source.length && source[i] !== "\n") i++;
    } else if (c === "/" && source[i + 1] === "*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end === -1 ? source.length : end + 2;
      for (let j = i; j < stop; j++) if (source[j] === "\n") line++;
      i = stop;
    } else if (c === '"' || c === "'") {
      const start = i;
      let value = "";
      i++;
      while (i < source.length && source[i] !== c && source[i] !== "\n") {
        if (source[i] === "\\") {
          value += source[i + 1] ?? "";
          i += 2;
        } else value += source[i++];
      }
      i++;
      push("string", source.slice(start, i), value, start, line);
    } else if (c === "`") {
      const start = i;
      const startLine = line;
      i++;
      scanTemplate();
      push("string", source.slice(start, i), source.slice(start + 1, i - 1), start, startLine);
    } else if (c === "/" && startsRegex(lastSignificant())) {
      i++;
      let inClass = false;
      while (i < source.length && source[i] !== "\n") {
        const r = source[i]!;
        if (r === "\\") i++;
        else if (r === "[") inClass = true;
        else if (r === "]") inClass = false;
        else if (r === "/" && !inClass) break;
        i++;
      }
      i++;
      while (i < source.length && /[a-z]/i.test(source[i]!)) i++;
      push("punct", "regex", "", i, line);
    } else if (/[A-Za-z_$]/.test(c)) {
      const start = i;
      while (i < source.length && /[\w$]/.test(source[i]!)) i++;
      push("name", source.slice(start, i), source.slice(start, i), start, line);
    } else if (/\d/.test(c)) {
      const start = i;
      while (i < source.length && /[\w.]/.test(source[i]!)) i++;
      push("number", source.slice(start, i), source.slice(start, i), start, line);
    } else if (c === "." && source.startsWith("...", i)) {
      push("punct", "...", "...", i, line);
      i += 3;
    } else if (c === "{") {
      braces.push("code");
      push("punct", c, c, i++, line);
    } else if (c === "}") {
      const was = braces.pop();
      if (was === "template") {
        i++;
        scanTemplate();
      } else push("punct", c, c, i++, line);
    } else push("punct", c, c, i++, line);
  }
  return tokens;
}

/** A `/` starts a regular expression where a value is expected, not after one. */
function startsRegex(previous: Token | undefined): boolean {
  if (!previous) return true;
  if (previous.kind === "name") return ["return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void", "throw", "yield", "await"].includes(previous.text);
  if (previous.kind === "string" || previous.kind === "number") return false;
  return ![")", "]", "}"].includes(previous.text);
}

/** The index of the `(` of the pipeline call: the first `(` at or after the stack's position, else `pipeline("<id>"`. */
function findCall(tokens: Token[], source: string, where: { call?: CallSite; pipelineId?: string }): number | undefined {
  if (where.call) {
    const offset = offsetOf(source, where.call);
    const first = tokens.findIndex((t) => t.offset >= offset);
    if (first !== -1) {
      // the position is the callee's (`pipeline`) or the call's `(`; a few tokens at most before the `(`
      for (let k = first; k < Math.min(tokens.length, first + 4); k++) if (tokens[k]!.text === "(") return k;
    }
  }
  if (where.pipelineId !== undefined) {
    for (let k = 0; k + 2 < tokens.length; k++) {
      if (tokens[k]!.kind === "name" && tokens[k + 1]!.text === "(" && tokens[k + 2]!.kind === "string" && tokens[k + 2]!.value === where.pipelineId) {
        const next = tokens[k + 3]?.text;
        if (next === "," || next === ")") return k + 1;
      }
    }
  }
  return undefined;
}

function offsetOf(source: string, { line, column }: CallSite): number {
  let offset = 0;
  for (let l = 1; l < line; l++) {
    const end = source.indexOf("\n", offset);
    if (end === -1) return source.length;
    offset = end + 1;
  }
  return offset + Math.max(0, column - 1);
}

const CLOSE: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

/** The index just after the bracket that closes the one at `open`. */
function skipBalanced(tokens: Token[], open: number): number {
  let depth = 0;
  for (let k = open; k < tokens.length; k++) {
    const text = tokens[k]!.text;
    if (text in CLOSE) depth++;
    else if (text === ")" || text === "]" || text === "}") {
      depth--;
      if (depth === 0) return k + 1;
    }
  }
  return tokens.length;
}

/** The items of a bracketed list (arguments, properties, elements): their first and past-last token. */
function splitList(tokens: Token[], open: number): { start: number; end: number }[] {
  const items: { start: number; end: number }[] = [];
  const close = skipBalanced(tokens, open) - 1;
  let start = open + 1;
  let k = start;
  while (k < close) {
    const text = tokens[k]!.text;
    if (text in CLOSE) k = skipBalanced(tokens, k);
    else if (text === ",") {
      if (k > start) items.push({ start, end: k });
      start = ++k;
    } else k++;
  }
  if (close > start) items.push({ start, end: close });
  return items;
}

/** The `{` or `[` of the literal a value is, following a name to its `const` in the same file; undefined when it is neither. */
function literalAt(tokens: Token[], index: number, seen = new Set<string>()): number | undefined {
  const token = tokens[index];
  if (!token) return undefined;
  if (token.text === "{" || token.text === "[") return index;
  if (token.kind !== "name" || seen.has(token.text)) return undefined;
  seen.add(token.text);
  for (let k = 0; k + 1 < tokens.length; k++) {
    if (["const", "let", "var"].includes(tokens[k]!.text) && tokens[k + 1]!.text === token.text) {
      // skip a type annotation to the `=`
      let m = k + 2;
      while (m < tokens.length && tokens[m]!.text !== "=" && tokens[m]!.text !== ";") m = tokens[m]!.text in CLOSE ? skipBalanced(tokens, m) : m + 1;
      if (tokens[m]?.text === "=") return literalAt(tokens, m + 1, seen);
    }
  }
  return undefined;
}

/** A property of the object literal at `open`: the line of its key and where its value starts. */
function propertyOf(tokens: Token[], open: number, name: string): { line: number; valueStart: number } | undefined {
  if (tokens[open]!.text !== "{") return undefined;
  for (const { start, end } of splitList(tokens, open)) {
    let k = start;
    while (k < end && ["async", "get", "set", "*"].includes(tokens[k]!.text) && k + 1 < end && tokens[k + 1]!.text !== ":" && tokens[k + 1]!.text !== "(") k++;
    const keyToken = tokens[k]!;
    if (keyToken.text === "...") continue;
    const keyName = keyToken.kind === "string" ? keyToken.value : keyToken.kind === "name" || keyToken.kind === "number" ? keyToken.text : null;
    if (keyName !== name) continue;
    const after = tokens[k + 1]?.text;
    return { line: keyToken.line, valueStart: after === ":" ? k + 2 : k };
  }
  return undefined;
}

/** In a task list (`[{ id: "load", ... }]`), the element whose `id` is `name`: the line of that `id`. */
function elementWithId(tokens: Token[], open: number, name: string): { line: number; valueStart: number } | undefined {
  for (const { start } of splitList(tokens, open)) {
    const element = literalAt(tokens, start);
    if (element === undefined || tokens[element]!.text !== "{") continue;
    const id = propertyOf(tokens, element, "id");
    if (id && tokens[id.valueStart]?.kind === "string" && tokens[id.valueStart]!.value === name) return { line: id.line, valueStart: element };
  }
  return undefined;
}
