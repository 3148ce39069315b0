import { systemClock } from "../../core/model/clock.ts";

/**
 * Timeouts and kill grace periods bound real work, so they wait on real timers, not the injected
 * Clock: a test clock that jumps through months of schedule would otherwise time out every task
 * the moment it starts. Nothing here reads the time; it only waits.
 */
export const realSleep = systemClock.sleep;
