import { link, lstat, mkdir, readdir, readlink, realpath, rename, rm, stat, symlink } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { randomBytes } from "node:crypto";
import { fsyncPath, publishFile } from "./atomic-file.ts";
import { workspaceOf } from "./workspace.ts";

/**
 * Partitions are published as immutable versions and a pointer switched in one step. A version
 * is a file under the dataset's workspace (`.orders.idem/versions/order_date=.../<stamp>-<run>.parquet`)
 * that is never rewritten; the partition's `part-0.parquet` is a symbolic link to the current one,
 * replaced by one rename(2). A reader that resolves the links first (`currentPartitionFiles`) reads
 * paths whose content never changes, so it cannot see a mix or a torn file, whatever a database
 * caches by path; replaced versions stay for a grace so that such a reader can finish.
 */

export function versionsDir(root: string, partition: string): string {
  return join(workspaceOf(root), "versions", partition);
}

/** Moves a finished staged file in as a new immutable version and points the partition at it. */
export async function publishVersion(options: { root: string; partition: string; staged: string; path: string; format: string; runId: string; now: Date }): Promise<{ version: string; previous: string | null }> {
  const dir = versionsDir(options.root, options.partition);
  await mkdir(dir, { recursive: true });
  const stamp = options.now.toISOString().replace(/[-:.]/g, "");
  const version = join(dir, `${stamp}-${options.runId.replace(/[^A-Za-z0-9_-]/g, "_")}-${randomBytes(3).toString("hex")}.${options.format}`);
  const previous = await adoptPrevious(options.path, dir, stamp, options.format);
  await publishFile(options.staged, version);
  const partitionDir = dirname(options.path);
  await mkdir(partitionDir, { recursive: true });
  const pointer = join(workspaceOf(options.root), "staging", `${options.partition}.${process.pid}.${randomBytes(4).toString("hex")}.link`);
  await symlink(relative(partitionDir, version), pointer);
  try {
    await rename(pointer, options.path);
  } catch (error) {
    await rm(pointer, { force: true });
    throw error;
  }
  await fsyncPath(partitionDir);
  return { version, previous };
}

/**
 * The version the partition points at before this write. A partition written by an older idem
 * holds a plain file: it is hard-linked in as a version first, so it is kept like any other.
 */
async function adoptPrevious(path: string, dir: string, stamp: string, format: string): Promise<string | null> {
  let info;
  try {
    info = await lstat(path);
  } catch {
    return null;
  }
  if (info.isSymbolicLink()) return resolve(dirname(path), await readlink(path));
  const adopted = join(dir, `${stamp}-adopted-${randomBytes(3).toString("hex")}.${format}`);
  await link(path, adopted);
  return adopted;
}

/**
 * Deletes replaced versions beyond the newest `keep`, but only those replaced more than `graceMs`
 * ago: a reader that resolved one a moment before the switch can still read it.
 */
export async function pruneVersions(root: string, partition: string, current: string, keep: number, graceMs: number, now: number): Promise<void> {
  const dir = versionsDir(root, partition);
  if (!existsSync(dir)) return;
  const names = (await readdir(dir)).sort();
  const replaced = names.filter((n) => join(dir, n) !== current);
  for (let i = 0; i < replaced.length - keep; i++) {
    // A version was replaced when the next one was written.
    const next = names[names.indexOf(replaced[i]!) + 1];
    const replacedAt = next ? (await stat(join(dir, next))).mtimeMs : now;
    if (now - replacedAt >= graceMs) await rm(join(dir, replaced[i]!), { force: true });
  }
}

/**
 * The files a reader should read for a dataset published by swapPartition: every partition's
 * current version, resolved to its immutable path (hive partition names are kept in it, so
 * `read_parquet(files, hive_partitioning = true)` still yields the partition column).
 */
export async function currentPartitionFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  let partitions: string[];
  try {
    partitions = await readdir(root);
  } catch {
    return out;
  }
  for (const partition of partitions.sort()) {
    let files: string[];
    try {
      files = await readdir(join(root, partition));
    } catch {
      continue; // not a directory
    }
    for (const file of files.sort()) {
      try {
        out.push(await realpath(join(root, partition, file)));
      } catch {
        // gone between the listing and the lookup: a partition being created or removed
      }
    }
  }
  return out;
}
