import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { stagingPath } from "./workspace.ts";

export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes a whole file or nothing: the bytes go to a staging file in the directory's workspace,
 * are flushed, and are renamed into place in one step, so a reader finds the old file or the
 * new one, never half of one, and never a temporary name in the directory.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const staged = await stagingPath(dirname(path), basename(path), "tmp");
  try {
    const handle = await open(staged, "w");
    try {
      await handle.writeFile(data);
    } finally {
      await handle.close();
    }
    await publishFile(staged, path);
  } finally {
    await rm(staged, { force: true });
  }
}

/** Moves a finished file into place with one rename, flushing the file and the directory entry. */
export async function publishFile(finished: string, path: string): Promise<void> {
  await fsyncPath(finished);
  await rename(finished, path);
  await fsyncPath(dirname(path));
}
