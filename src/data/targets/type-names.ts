import { DefinitionError } from "../../core/model/errors.ts";

// A type name read back from a catalog is spliced into CAST(...); this keeps that text to the
// shape of a type name so a table created by someone else cannot smuggle SQL in.
const TYPE_NAME = /^[A-Za-z][A-Za-z0-9_ ,()[\]]*$/;

export function checkedTypeName(text: string, where: string): string {
  if (!TYPE_NAME.test(text)) throw new DefinitionError(`${where}: unsupported column type ${JSON.stringify(text)}`);
  return text;
}
