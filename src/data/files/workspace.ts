import { randomBytes } from "node:crypto";
import { mkdir, readdir, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * The bookkeeping directory for files written into `dir`: beside it (same filesystem, so a
 * rename from it is atomic), never inside it, because DuckDB's globs match hidden names too.
 * It holds files being staged, replaced versions and the write history.
 */
export function workspaceOf(dir: string): string {
  return join(dirname(dir), `.${basename(dir)}.idem`);
}

/**
 * A fresh staging path for `name` in the workspace of `dir`. Staged files left by writers that
 * were killed (their pid, in the name, is gone) are removed first.
 */
export async function stagingPath(dir: string, name: string, ext: string): Promise<string> {
  const staging = join(workspaceOf(dir), "staging");
  await mkdir(staging, { recursive: true });
  for (const file of await readdir(staging)) {
    const pid = Number(file.split(".").at(-3));
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    await rm(join(staging, file), { force: true });
  }
  return join(staging, `${name}.${process.pid}.${randomBytes(4).toString("hex")}.${ext}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
