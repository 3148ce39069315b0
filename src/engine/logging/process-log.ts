import type { EngineEvents } from "../events/engine-events.ts";
import { eventLine, locatingFields, type LogLevel } from "../events/event-lines.ts";
import type { EngineEventName } from "../events/event-map.ts";

export type { LogLevel } from "../events/event-lines.ts";

export const LOG_FORMATS = ["pretty", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

const RANK: Record<LogLevel, number> = { debug: 20, info: 30, warn: 40, error: 50 };

export type LogFields = Record<string, string | number | boolean | null>;

export interface ProcessLogOptions {
  format: LogFormat;
  /** Lines below this level are not written. */
  level: LogLevel;
  /** What the process is (scheduler, worker, dev, serve) and which one (the engine's worker id). */
  role: string;
  id: string;
  /** Every message and string field passes through it: known secrets never reach the log. */
  masker: { mask(text: string): string };
  /** Default: file descriptor 1 (stdout). */
  fd?: number;
}

/**
 * A long-running process's log: its own lines and the engine's events (`follow`), as JSON lines
 * (pino: level, time, role, id, pid, the message and the fields that locate it) or as text for a
 * person (`pretty`: the time and the message, a level tag when it is not info). Task logs are
 * not written here: each attempt has its own file.
 */
export interface ProcessLog {
  readonly format: LogFormat;
  enabled(level: LogLevel): boolean;
  write(level: LogLevel, message: string, fields?: LogFields): void;
  /** Writes each engine event at or above the level, but those named in `except`; returns the unsubscribe. */
  follow(events: EngineEvents, except?: readonly EngineEventName[]): () => void;
}

/** The process log; pino loads only for `json`. */
export async function openProcessLog(options: ProcessLogOptions): Promise<ProcessLog> {
  const sink = options.format === "json" ? await jsonSink(options) : prettySink(options);
  const { masker } = options;
  const threshold = RANK[options.level];
  const enabled = (level: LogLevel) => RANK[level] >= threshold;
  const write = (level: LogLevel, message: string, fields: LogFields = {}) => {
    if (!enabled(level)) return;
    const masked: LogFields = {};
    for (const [key, value] of Object.entries(fields)) masked[key] = typeof value === "string" ? masker.mask(value) : value;
    sink(level, masker.mask(message), masked);
  };
  return {
    format: options.format,
    enabled,
    write,
    follow(events, except = []) {
      const skipped = new Set<EngineEventName>(except);
      return events.onAny((event) => {
        if (skipped.has(event.name)) return;
        const line = eventLine(event);
        if (!enabled(line.level)) return;
        write(line.level, line.message, { event: event.name, ...locatingFields(event.payload) });
      });
    },
  };
}

type Sink = (level: LogLevel, message: string, fields: LogFields) => void;

async function jsonSink(options: ProcessLogOptions): Promise<Sink> {
  const { pino } = await import("pino");
  const logger = pino(
    {
      level: options.level,
      base: { role: options.role, id: options.id, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // Synchronous: a line written before the process exits (a signal, an error) is not lost.
    pino.destination({ dest: options.fd ?? 1, sync: true }),
  );
  return (level, message, fields) => logger[level](fields, message);
}

function prettySink(options: ProcessLogOptions): Sink {
  const fd = options.fd ?? 1;
  const out = fd === 2 ? process.stderr : process.stdout;
  return (level, message) => {
    const tag = level === "info" ? "" : `${level.toUpperCase()} `;
    out.write(`${new Date().toISOString()} ${tag}${message}\n`);
  };
}
