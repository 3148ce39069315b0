import { closeSync, mkdirSync, openSync, utimesSync, watch, type FSWatcher } from "node:fs";
import { join } from "node:path";
import type { Store } from "../../store/port.ts";

/**
 * Processes sharing one SQLite state file tell each other "there is new work" by touching a file
 * that the others watch (inotify), so a downstream task starts within milliseconds on another
 * worker without anyone polling fast. Polling remains as the fallback.
 */
export function wakeupFile(stateDir: string): string {
  return join(stateDir, "wakeup");
}

export function notifyWork(stateDir: string): void {
  const file = wakeupFile(stateDir);
  const now = new Date();
  try {
    utimesSync(file, now, now);
  } catch {
    mkdirSync(stateDir, { recursive: true });
    closeSync(openSync(file, "a"));
  }
}

export function watchWork(stateDir: string, onWork: () => void): () => void {
  const file = wakeupFile(stateDir);
  mkdirSync(stateDir, { recursive: true });
  closeSync(openSync(file, "a"));
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(file, { persistent: false }, () => onWork());
    watcher.on("error", () => watcher?.close());
  } catch {
    // no inotify here: polling alone will do
  }
  return () => watcher?.close();
}

/** The store's own channel (PostgreSQL LISTEN/NOTIFY) when it has one, else the watched file. */
export async function subscribeToWork(store: Store, stateDir: string, onWork: () => void): Promise<() => void> {
  const unwatchFile = watchWork(stateDir, onWork);
  if (!store.watchWork) return unwatchFile;
  const unlisten = await store.watchWork(onWork);
  return () => {
    unwatchFile();
    void unlisten();
  };
}
