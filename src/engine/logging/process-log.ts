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
  /** What the process is: scheduler, worker, dev, serve. */
  role: string;
  /** Default: file descriptor 1 (stdout). */
  fd?: number;
}

/** Who the process is once its engine is open: its id (the engine's worker id) and the secrets to mask. */
export interface ProcessIdentity {
  id: string;
  masker: { mask(text: string): string };
}

/**
 * A long-running process's log: its own lines and the engine's events (`follow`), as JSON lines
 * (pino: level, time, role, id, pid, the message and the fields that locate it) or as text for a
 * person (`pretty`: the time and the message, a level tag when it is not info). Task logs are
 * not written here: each attempt has its own file.
 *
 * It opens before the engine, so that what the process prints while it loads the project (a
 * pipeline file's top level) is a line of it too; lines wait until `identify` gives the
 * process's id and its secrets, so none is written unmasked.
 */
export interface ProcessLog {
  readonly format: LogFormat;
  enabled(level: LogLevel): boolean;
  write(level: LogLevel, message: string, fields?: LogFields): void;
  identify(identity: ProcessIdentity): void;
  /** Writes each engine event at or above the level, but those named in `except`; returns the unsubscribe. */
  follow(events: EngineEvents, except?: readonly EngineEventName[]): () => void;
}

/** The process log; pino loads only for `json`. */
export async function openProcessLog(options: ProcessLogOptions): Promise<ProcessLog> {
  const sinkFor = options.format === "json" ? await jsonSink(options) : prettySink(options);
  const threshold = RANK[options.level];
  const enabled = (level: LogLevel) => RANK[level] >= threshold;
  let identity: ProcessIdentity | null = null;
  let sink: Sink | null = null;
  const held: [LogLevel, string, LogFields, number][] = [];
  const emit = (level: LogLevel, message: string, fields: LogFields, at: number) => {
    const { masker } = identity!;
    const masked: LogFields = {};
    for (const [key, value] of Object.entries(fields)) masked[key] = typeof value === "string" ? masker.mask(value) : value;
    sink!(level, masker.mask(message), masked, at);
  };
  const write = (level: LogLevel, message: string, fields: LogFields = {}) => {
    if (!enabled(level)) return;
    if (sink) emit(level, message, fields, Date.now());
    else held.push([level, message, fields, Date.now()]);
  };
  // JSON lines only on stdout: what else this process prints there (a pipeline file's top level
  // when it is imported, say) becomes a line of the log. pino writes to the descriptor itself.
  if (options.format === "json" && (options.fd ?? 1) === 1) {
    process.stdout.write = ((chunk: string | Uint8Array, encoding?: unknown, done?: unknown) => {
      const text = typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
      for (const line of text.split("\n")) if (line.trim() !== "") write("info", line, { event: "stdout" });
      const callback = typeof encoding === "function" ? encoding : done;
      if (typeof callback === "function") callback();
      return true;
    }) as typeof process.stdout.write;
  }
  return {
    format: options.format,
    enabled,
    write,
    identify(who) {
      identity = who;
      sink = sinkFor(who.id);
      for (const [level, message, fields, at] of held.splice(0)) emit(level, message, fields, at);
    },
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

type Sink = (level: LogLevel, message: string, fields: LogFields, at: number) => void;

async function jsonSink(options: ProcessLogOptions): Promise<(id: string) => Sink> {
  const { pino } = await import("pino");
  return (id) => {
    const logger = pino(
      {
        level: options.level,
        base: { role: options.role, id, pid: process.pid },
        timestamp: false,
        formatters: { level: (label) => ({ level: label }) },
      },
      // Synchronous: a line written before the process exits (a signal, an error) is not lost.
      pino.destination({ dest: options.fd ?? 1, sync: true }),
    );
    // The time a line happened, not when it was written (held lines are written later).
    return (level, message, fields, at) => logger[level]({ time: new Date(at).toISOString(), ...fields }, message);
  };
}

function prettySink(options: ProcessLogOptions): (id: string) => Sink {
  const out = (options.fd ?? 1) === 2 ? process.stderr : process.stdout;
  return () => (level, message, _fields, at) => {
    const tag = level === "info" ? "" : `${level.toUpperCase()} `;
    out.write(`${new Date(at).toISOString()} ${tag}${message}\n`);
  };
}
