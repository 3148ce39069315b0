import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";

const CHUNK = 64 * 1024;

/**
 * Where the last `lines` lines of a file begin, found by reading backwards chunk by chunk and
 * counting newlines: memory stays one chunk whatever the size of the file or of its lines.
 */
export function tailOffset(path: string, lines: number): number {
  if (!existsSync(path)) return 0;
  const size = statSync(path).size;
  if (lines <= 0) return size;
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(CHUNK);
    let end = size;
    // A final newline ends the last line; it does not start an empty one.
    let newlines = 0;
    let skipFinal = true;
    while (end > 0) {
      const start = Math.max(0, end - CHUNK);
      const read = readSync(fd, buffer, 0, end - start, start);
      for (let i = read - 1; i >= 0; i--) {
        if (buffer[i] !== 0x0a) {
          skipFinal = false;
          continue;
        }
        if (skipFinal && start + i === size - 1) continue;
        if (++newlines === lines) return start + i + 1;
      }
      end = start;
    }
    return 0;
  } finally {
    closeSync(fd);
  }
}

export interface LogStreamOptions {
  /** Byte offset to start at. */
  from: number;
  /** Where the bytes go; resolves once the chunk is taken (so a slow reader slows us, not our memory). */
  write: (chunk: Buffer) => Promise<void>;
  /** With --follow: called at the end of the file; true while more may come (the attempt runs). */
  more?: () => Promise<boolean>;
  /** How long to wait at the end of a growing file. Default 200 ms. */
  pollMs?: number;
}

/** Copies a log file from an offset, chunk by chunk; with `more`, keeps reading while it grows. */
export async function streamLog(path: string, options: LogStreamOptions): Promise<void> {
  let offset = options.from;
  const buffer = Buffer.alloc(CHUNK);
  for (;;) {
    if (existsSync(path)) {
      const fd = openSync(path, "r");
      try {
        for (;;) {
          const read = readSync(fd, buffer, 0, CHUNK, offset);
          if (read === 0) break;
          offset += read;
          await options.write(Buffer.from(buffer.subarray(0, read)));
        }
      } finally {
        closeSync(fd);
      }
    }
    if (!options.more || !(await options.more())) {
      if (!options.more) return;
      // One last look: what was written between our last read and the attempt's end.
      if (existsSync(path) && statSync(path).size > offset) continue;
      return;
    }
    await new Promise((r) => setTimeout(r, options.pollMs ?? 200));
  }
}
