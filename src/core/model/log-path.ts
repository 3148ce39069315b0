import { join } from "node:path";
import { parseMappedTaskId } from "../policy/fan-out.ts";

/**
 * Where an attempt's log lives: `<logDir>/<run>/<task>/try-<n>.log`, the run id (which names the
 * pipeline) made path-safe. The store records it on the attempt when the claim starts it; the
 * worker that claims says which folder (`<stateDir>/logs`).
 *
 * A mapped instance's folder is `task[key]` with the key percent-encoded (a key may hold `/` or
 * be `..`), and a long key shortened with a hash of the whole, so the folder name stays within
 * what a file system takes and two keys never share a folder.
 */
export function attemptLogPath(logDir: string, runId: string, taskId: string, tryNumber: number): string {
  return join(logDir, runId.replace(/[^A-Za-z0-9_.@-]/g, "_"), taskFolder(taskId), `try-${tryNumber}.log`);
}

function taskFolder(taskId: string): string {
  const mapped = parseMappedTaskId(taskId);
  if (!mapped) return taskId;
  const encoded = encodeURIComponent(mapped.key).replace(/\./g, "%2E");
  const key = encoded.length <= 160 ? encoded : `${encoded.slice(0, 120)}~${fnv1a(mapped.key)}`;
  return `${mapped.taskId}[${key}]`;
}

/** 64-bit FNV-1a of the key's UTF-16 code units, as hex: enough to tell two long keys apart. */
function fnv1a(text: string): string {
  let hash = 0xcbf29ce484222325n;
  for (let i = 0; i < text.length; i++) {
    hash ^= BigInt(text.charCodeAt(i));
    hash = (hash * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return hash.toString(16).padStart(16, "0");
}
