import { moveState } from "../../engine/compose.ts";
import { table } from "../format.ts";
import type { Cli } from "../lazy.ts";

export async function migrate(_cli: Cli, flags: { from: string; to: string; force?: boolean }) {
  const copied = await moveState({ from: flags.from, to: flags.to, force: flags.force === true });
  console.log(table(["table", "rows"], [...copied].map(([name, rows]) => [name, rows])));
  const total = [...copied.values()].reduce((a, b) => a + b, 0);
  console.log(`\ncopied ${total} row(s) in one transaction; point the project at the new store with state: "${redact(flags.to)}" or IDEM_STATE_URL`);
}

/** The URL as it may be printed: without a password. */
function redact(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}
