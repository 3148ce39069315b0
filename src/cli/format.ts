/** Plain-text tables and times for the terminal; `--json` output bypasses all of this. */
export function table(headers: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers.map((h) => h.toUpperCase())), ...cells.map(line)].join("\n");
}

export function isoTime(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

export function elapsed(from: number | null | undefined, to: number | null | undefined): string | null {
  if (from === null || from === undefined || to === null || to === undefined) return null;
  const ms = to - from;
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  return minutes < 60 ? `${minutes}m${Math.round((ms % 60_000) / 1000)}s` : `${Math.floor(minutes / 60)}h${minutes % 60}m`;
}

export function printJson(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}

/** "3x, last 2026-09-08T02:00:05Z", plus why the latest one did not happen. */
export function restated(r: { restateCount: number; restatedAt: number | null; restateNote: string | null }): string | null {
  const parts = [r.restateCount > 0 ? `${r.restateCount}x, last ${isoTime(r.restatedAt)}` : null, r.restateNote].filter((p) => p !== null);
  return parts.length ? parts.join("; ") : null;
}
