import type { Remedy } from "../core/model/errors.ts";

/** A remedy the engine names, as the command a user types (`IdemError.withRemedy`). */
export function remedyAsCommand(remedy: Remedy): string {
  switch (remedy.action) {
    case "create-pool":
      return `create it: idem pools set ${remedy.pool} --slots N, or add it to \`pools\` in idem.config.ts`;
    case "clear-run":
      return `use idem clear ${remedy.runId} --reason "..." to run it again`;
    case "create-project":
      return "create a project with `idem init`, or give --config <file>";
    case "list-tokens":
      return "see idem tokens list";
  }
}
