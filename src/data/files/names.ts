import { DefinitionError } from "../../core/model/errors.ts";

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * A partition value becomes a directory name (`column=value`), so it must not be able to
 * climb out of the root or hide: no slash, backslash, "..", control characters or leading dot.
 */
export function checkPartitionValue(column: string, value: string): string {
  const where = `partition ${column}=${JSON.stringify(value)}`;
  if (typeof value !== "string" || value === "") throw new DefinitionError(`${where}: the value is empty`);
  if (value.includes("/") || value.includes("\\")) throw new DefinitionError(`${where}: the value contains a path separator`);
  if (value.includes("..")) throw new DefinitionError(`${where}: the value contains ".."`);
  if (CONTROL.test(value)) throw new DefinitionError(`${where}: the value contains a control character`);
  if (value.startsWith(".")) throw new DefinitionError(`${where}: the value starts with "."`);
  if (value.includes("=")) throw new DefinitionError(`${where}: the value contains "="`);
  return value;
}

export function checkPartitionColumn(column: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(column)) throw new DefinitionError(`partition column ${JSON.stringify(column)}: use letters, digits and _`);
  return column;
}
