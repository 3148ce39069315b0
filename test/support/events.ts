import { EngineEvents } from "../../src/engine/events/engine-events.ts";
import { eventLines } from "../../src/engine/events/event-lines.ts";

/** Events whose lines (info and above, as the process log words them) are pushed to `lines`. */
export function eventsLoggedTo(lines: string[]): EngineEvents {
  const events = new EngineEvents();
  eventLines(events, lines);
  return events;
}
