import { createHash } from "node:crypto";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { rm, stat } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { DataError, DefinitionError } from "../../core/model/errors.ts";
import type { WriteContext } from "../context.ts";
import { fsyncPath, writeFileAtomic } from "./atomic-file.ts";

export const MANIFEST_NAME = "_manifest.json";

export interface ManifestFile {
  /** Relative to the manifest's directory. */
  path: string;
  rows: number;
  bytes: number;
  /** sha256 of the content, hex: a file rewritten since, even to the same size, is told apart. */
  sha256: string;
}

export interface Manifest {
  runId: string;
  pipelineId: string;
  taskId: string;
  businessDates: string[];
  watermark: string | number | null;
  files: ManifestFile[];
  totalRows: number;
  writtenAt: string;
}

/**
 * Written last, after every data file of the run is in place: its presence says "this run's
 * output is complete". Each listed file must exist; its size and content hash are recorded so a
 * reader can tell a file replaced since. A writer removes the manifest (`invalidateManifest`)
 * before it touches a data file, as idem's file writers do, so a rerun that fails half-way leaves
 * no manifest vouching for the old files.
 */
export async function writeManifest(
  dir: string,
  input: { context: WriteContext; businessDates: readonly string[]; watermark?: string | number | null; files: readonly { path: string; rows: number }[]; now?: () => Date },
): Promise<Manifest> {
  const files: ManifestFile[] = [];
  for (const f of input.files) {
    if (isAbsolute(f.path) || f.path.split(/[\\/]/).includes("..")) throw new DefinitionError(`manifest in ${dir}: file paths must be relative and inside it (${f.path})`);
    const full = join(dir, f.path);
    if (!existsSync(full)) throw new DataError(`manifest in ${dir}: ${f.path} does not exist; a manifest is written only after all data files`);
    files.push({ path: f.path, rows: f.rows, bytes: (await stat(full)).size, sha256: await fileSha256(full) });
  }
  const manifest: Manifest = {
    runId: input.context.runId,
    pipelineId: input.context.pipelineId,
    taskId: input.context.taskId,
    businessDates: [...input.businessDates],
    watermark: input.watermark ?? null,
    files,
    totalRows: files.reduce((n, f) => n + f.rows, 0),
    writtenAt: (input.now?.() ?? new Date()).toISOString(),
  };
  await writeFileAtomic(join(dir, MANIFEST_NAME), JSON.stringify(manifest, null, 2) + "\n");
  return manifest;
}

export function readManifest(dir: string): Manifest | null {
  const file = join(dir, MANIFEST_NAME);
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, "utf8")) as Manifest;
}

/** Refuses to read a directory whose writer has not finished (or whose files changed since). */
export async function requireManifest(dir: string, expect: { businessDate?: string } = {}): Promise<Manifest> {
  const manifest = readManifest(dir);
  if (!manifest) throw new DataError(`${dir}: no ${MANIFEST_NAME}; its writer has not finished, refusing to read`);
  if (expect.businessDate && !manifest.businessDates.includes(expect.businessDate)) {
    throw new DataError(`${dir}: the manifest of run ${manifest.runId} covers ${manifest.businessDates.join(", ") || "no dates"}, not ${expect.businessDate}`);
  }
  for (const f of manifest.files) {
    const full = join(dir, f.path);
    if (!existsSync(full)) throw new DataError(`${dir}: ${f.path} is listed in the manifest but missing`);
    const bytes = (await stat(full)).size;
    if (bytes !== f.bytes) throw new DataError(`${dir}: ${f.path} is ${bytes} bytes, the manifest says ${f.bytes}`);
    if (typeof f.sha256 !== "string") throw new DataError(`${dir}: the manifest of run ${manifest.runId} has no content hash for ${f.path} (written by an older idem); run its writer again`);
    if ((await fileSha256(full)) !== f.sha256) throw new DataError(`${dir}: ${f.path} changed since run ${manifest.runId} wrote its manifest (content hash differs)`);
  }
  return manifest;
}

/**
 * Removes the directory's manifest, durably, before data files change: readers then refuse the
 * directory until the writer finishes and writes a new one. True if there was one.
 */
export async function invalidateManifest(dir: string): Promise<boolean> {
  const file = join(dir, MANIFEST_NAME);
  if (!existsSync(file)) return false;
  await rm(file, { force: true });
  await fsyncPath(dir);
  return true;
}

export function fileSha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256");
    createReadStream(path)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolve(hash.digest("hex")));
  });
}

/** Waits until the manifest appears (polling), then checks it; times out with a clear error. */
export async function waitForManifest(dir: string, options: { timeoutMs: number; pollMs?: number; businessDate?: string; signal?: AbortSignal }): Promise<Manifest> {
  const deadline = Date.now() + options.timeoutMs;
  const poll = options.pollMs ?? 250;
  for (;;) {
    const manifest = readManifest(dir);
    if (manifest && (!options.businessDate || manifest.businessDates.includes(options.businessDate))) {
      return requireManifest(dir, options.businessDate ? { businessDate: options.businessDate } : {});
    }
    if (options.signal?.aborted) throw new Error(`${dir}: stopped waiting for ${MANIFEST_NAME}`);
    if (Date.now() >= deadline) {
      throw new DataError(`${dir}: no ${MANIFEST_NAME}${options.businessDate ? ` for ${options.businessDate}` : ""} after ${options.timeoutMs} ms; refusing to read`);
    }
    await new Promise((r) => setTimeout(r, Math.min(poll, Math.max(1, deadline - Date.now()))));
  }
}
