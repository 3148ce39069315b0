import type { Registry } from "prom-client";
import type { EngineEvents } from "../../events/engine-events.ts";

/**
 * One metric of what only this process knows, fed by the engine's events: it registers its
 * instruments on the process's registry and subscribes to the events it counts; it returns the
 * function that stops listening. Adding one is a file in this folder, its line in
 * `PROCESS_METRICS` (index.ts) and a test that emits its events and reads the scrape.
 */
export type ProcessMetric = (registry: Registry, events: EngineEvents) => () => void;

/** Buckets for attempts and queue waits: 10 ms to 2 hours. */
export const ATTEMPT_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 1800, 3600, 7200];
/** Buckets for scheduler ticks: 1 ms to 5 s. */
export const TICK_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
