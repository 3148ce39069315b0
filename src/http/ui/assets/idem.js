// idem's one page script: the time zone selector, one live-events stream per tab, log tails.
// Pages work without it (timestamps then stay in UTC and nothing recolours by itself).
(() => {
  "use strict";
  const url = new URL(location.href);
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  // A page whose content the server read in one zone (the audit log's days) shows its times in that zone.
  const pinnedZone = document.querySelector("[data-page-zone]")?.dataset.pageZone || null;
  const chosenZone = () => new URL(location.href).searchParams.get("tz") || pinnedZone || localStorage.getItem("idem.tz");
  const zoneOf = () => chosenZone() || browserZone;

  // --- timestamps follow one zone; business dates are plain text and never touched ---------------
  const formats = new Map();
  function formatter(zone) {
    let f = formats.get(zone);
    if (!f) {
      f = new Intl.DateTimeFormat("en-CA", {
        timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
        second: "2-digit", hourCycle: "h23", timeZoneName: "short",
      });
      formats.set(zone, f);
    }
    return f;
  }
  function format(ms, zone, withSeconds) {
    const p = Object.fromEntries(formatter(zone).formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}${withSeconds ? `:${p.second}` : ""} ${p.timeZoneName}`;
  }
  function paintTimes(root) {
    let zone = zoneOf();
    try { formatter(zone); } catch { zone = "UTC"; }
    for (const el of root.querySelectorAll("time[data-t]")) {
      el.textContent = format(Number(el.dataset.t), zone, el.hasAttribute("data-s"));
      el.title = new Date(Number(el.dataset.t)).toISOString();
    }
    for (const el of document.querySelectorAll("[data-zone-label]")) el.textContent = zone;
    // A title (and label) naming an instant: the server wrote it in UTC; the page's zone replaces that.
    for (const el of root.querySelectorAll("[data-title-t]")) {
      const ms = Number(el.dataset.titleT);
      if (el.dataset.title === undefined) el.dataset.title = el.getAttribute("title") || "";
      const text = el.dataset.title.replace(format(ms, "UTC", false), format(ms, zone, false));
      el.setAttribute("title", text);
      if (el.hasAttribute("aria-label")) el.setAttribute("aria-label", text);
    }
  }
  const select = document.getElementById("tz");
  if (select) {
    const current = zoneOf();
    const zones = new Set([browserZone, "UTC", ...(select.dataset.zones || "").split(",").filter(Boolean), current]);
    let all = [];
    try { all = Intl.supportedValuesOf("timeZone"); } catch { /* old engines: the short list is enough */ }
    select.textContent = "";
    const add = (value, label) => {
      const o = document.createElement("option");
      o.value = value; o.textContent = label; select.append(o);
    };
    add("", `Browser (${browserZone})`);
    for (const z of zones) if (z !== browserZone) add(z, z);
    for (const z of all) if (!zones.has(z)) add(z, z);
    select.value = chosenZone() || "";
    select.addEventListener("change", () => {
      const next = new URL(location.href);
      if (select.value) { next.searchParams.set("tz", select.value); localStorage.setItem("idem.tz", select.value); }
      else { next.searchParams.delete("tz"); localStorage.removeItem("idem.tz"); }
      // The server read this page's days in its pinned zone: ask it again in the new one.
      if (pinnedZone) { if (!select.value) next.searchParams.set("tz", browserZone); location.assign(next); return; }
      history.replaceState(null, "", next);
      paintTimes(document);
    });
  }
  paintTimes(document);

  // A chosen zone is part of the view: links within idem carry it, so a copied URL shows the same.
  document.addEventListener("click", (event) => {
    const a = event.target instanceof Element ? event.target.closest("a[href]") : null;
    const tz = new URL(location.href).searchParams.get("tz");
    if (!a || !tz || a.origin !== location.origin || !a.pathname.startsWith("/ui")) return;
    const next = new URL(a.href);
    if (!next.searchParams.has("tz")) { next.searchParams.set("tz", tz); a.href = next.href; }
  }, true);
  for (const form of document.querySelectorAll("form[method=get]")) {
    form.addEventListener("submit", () => {
      // A form that filters by days (data-zoned) always says which zone the days are in: the one this page shows.
      const tz = new URL(location.href).searchParams.get("tz") || (form.hasAttribute("data-zoned") ? zoneOf() : null);
      if (tz && !form.querySelector("input[name=tz]")) {
        const input = document.createElement("input");
        input.type = "hidden"; input.name = "tz"; input.value = tz; form.append(input);
      }
    });
  }

  // --- live state: one EventSource per tab recolours whatever shows a run or task instance -------
  const STATE = /\bs-[a-z_]+\b/g;
  const LABEL = { up_for_retry: "up for retry", up_for_reschedule: "up for reschedule", upstream_failed: "upstream failed" };
  function recolour(el, state) {
    el.setAttribute("class", `${(el.getAttribute("class") || "").replace(STATE, "").trim()} s-${state}`);
    if (el.classList.contains("b")) el.textContent = LABEL[state] || state;
    if (el.hasAttribute("aria-label")) el.setAttribute("aria-label", el.getAttribute("aria-label").replace(/: [a-z_ ]+$/, `: ${LABEL[state] || state}`));
  }
  const grid = document.querySelector("table.grid[data-tasks]");
  const gridTasks = grid ? grid.dataset.tasks.split(",") : [];
  function onTask(change) {
    for (const el of document.querySelectorAll(`[data-ti="${CSS.escape(`${change.runId}/${change.taskId}`)}"]`)) recolour(el, change.state);
    if (!grid) return;
    const row = grid.querySelector(`tr[data-run="${CSS.escape(change.runId)}"]`);
    const column = gridTasks.indexOf(change.taskId);
    if (!row || column < 0) return;
    const cell = row.children[column + 2]?.firstElementChild;
    if (!cell) return;
    // A mapped task's cell shows its instances' most pressing state, counted in its label: only
    // the mapped task's end recolours it (a reload counts them again).
    if (cell.hasAttribute("data-mapped")) {
      if (["success", "failed", "skipped", "upstream_failed"].includes(change.state)) cell.setAttribute("class", `${cell.getAttribute("class").replace(STATE, "").trim()} s-${change.state}`);
      return;
    }
    recolour(cell, change.state);
    if (change.tryNumber > 1 && cell.tagName === "A") {
      cell.classList.add("retried");
      const label = `${LABEL[change.state] || change.state} (try ${change.tryNumber})`;
      cell.title = label;
      cell.setAttribute("aria-label", `${change.taskId}: ${label}`);
    }
  }
  function onRun(change) {
    for (const el of document.querySelectorAll(`[data-rs="${CSS.escape(change.runId)}"]`)) recolour(el, change.state);
    if (grid) addRow(change);
  }

  // A run the open grid does not show (a backfill's, a trigger's): its date's rows come from the
  // server, rendered as the page renders them, and take the place of what the date showed.
  const asking = new Set();
  async function addRow(change) {
    const { pipeline, from, to, rows } = grid.dataset;
    if (change.pipelineId !== pipeline || !change.businessDate || change.businessDate < from || change.businessDate > to) return;
    if (grid.querySelector(`tr[data-run="${CSS.escape(change.runId)}"]`) || asking.has(change.runId)) return;
    asking.add(change.runId);
    try {
      const response = await fetch(`${rows}?date=${encodeURIComponent(change.businessDate)}`, { headers: { accept: "text/html" } });
      if (!response.ok) return;
      const template = document.createElement("template");
      template.innerHTML = (await response.text()).trim();
      const fresh = [...template.content.querySelectorAll("tr")];
      if (fresh.length === 0) return;
      const body = grid.tBodies[0];
      const old = [...body.querySelectorAll(`tr[data-date="${CSS.escape(change.businessDate)}"]`)];
      const after = [...body.querySelectorAll("tr[data-date]")].find((tr) => tr.dataset.date < change.businessDate);
      let place = old[0] || after || null;
      // Newest first, a header per month: a date of a newer month than the row it precedes goes above that row's header.
      if (!old[0] && place && place.previousElementSibling?.classList.contains("mh") && place.dataset.date.slice(0, 7) !== change.businessDate.slice(0, 7)) place = place.previousElementSibling;
      for (const tr of fresh) body.insertBefore(tr, place);
      for (const tr of old) tr.remove();
      paintTimes(body);
    } finally {
      asking.delete(change.runId);
    }
  }
  const live = document.getElementById("live");
  if (live && window.EventSource) {
    const source = new EventSource(live.dataset.src);
    source.addEventListener("open", () => { live.classList.add("on"); live.title = "live: changes appear without a reload"; });
    source.addEventListener("error", () => { live.classList.remove("on"); live.title = "reconnecting"; });
    const handle = (kind) => (event) => {
      let data;
      try { data = JSON.parse(event.data); } catch { return; }
      if (kind === "task" || (data.taskId && data.state)) onTask(data);
      else if (kind === "run" || (data.runId && data.state)) onRun(data);
      document.dispatchEvent(new CustomEvent("idem:change", { detail: data }));
    };
    source.addEventListener("task", handle("task"));
    source.addEventListener("run", handle("run"));
    // The server could not replay everything this tab missed: only a reload shows the truth.
    source.addEventListener("reset", () => location.reload());
  }

  // --- a log opens where the reading starts: at a search hit, else at its end (where errors are) --
  const logView = document.querySelector("pre.log");
  if (logView) {
    const hit = url.searchParams.has("offset") ? logView.querySelector("mark") : null;
    if (hit) logView.scrollTop += hit.getBoundingClientRect().top - logView.getBoundingClientRect().top - 48;
    else if (logView.hasAttribute("data-end")) logView.scrollTop = logView.scrollHeight;
  }

  // --- log tail: while the attempt runs, fetch what was appended since the last byte shown -------
  const log = document.querySelector("pre.log[data-tail]");
  if (log) {
    let offset = Number(log.dataset.next);
    const status = document.getElementById("tail-status");
    const tick = async () => {
      try {
        const response = await fetch(`${log.dataset.tail}&offset=${offset}`, { headers: { accept: "text/plain" } });
        const text = await response.text();
        if (text) {
          const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
          log.append(text);
          if (stick) log.scrollTop = log.scrollHeight;
        }
        offset = Number(response.headers.get("x-next-offset") || offset);
        if (response.headers.get("x-attempt-running") === "true") setTimeout(tick, 1000);
        else if (status) status.textContent = "attempt finished: the log is complete";
      } catch {
        setTimeout(tick, 3000);
      }
    };
    setTimeout(tick, 1000);
  }
})();
