import { Histogram } from "prom-client";
import { TICK_BUCKETS, type ProcessMetric } from "./process-metric.ts";

/** `idem_scheduler_tick_duration_seconds` and `idem_scheduler_tick_lag_seconds`, from `scheduler:tick`. */
export const schedulerTicks: ProcessMetric = (registry, events) => {
  const durations = new Histogram<"leader">({
    name: "idem_scheduler_tick_duration_seconds",
    help: "How long this process's scheduler ticks took, by whether it led",
    labelNames: ["leader"],
    buckets: TICK_BUCKETS,
    registers: [registry],
  });
  const lags = new Histogram<"leader">({
    name: "idem_scheduler_tick_lag_seconds",
    help: "How late this process's scheduler ticks began after the time the tick before asked for, by whether it led",
    labelNames: ["leader"],
    buckets: TICK_BUCKETS,
    registers: [registry],
  });
  return events.on("scheduler:tick", (t) => {
    durations.observe({ leader: String(t.leader) }, t.durationMs / 1000);
    lags.observe({ leader: String(t.leader) }, t.lagMs / 1000);
  });
};
