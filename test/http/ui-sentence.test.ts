import { describe, expect, it } from "vitest";
import { formatInstant } from "../../src/core/time/dates.ts";
import { sentence } from "../../src/http/ui/sentence.ts";

describe("an engine sentence in a page", () => {
  it("makes each instant a <time data-t> the page script writes in the page's zone, and leaves business dates alone", () => {
    const due = Date.parse("2026-11-17T06:00:00Z");
    const text = `did not run: warehouse has no run for 2026-11-16, due at ${formatInstant(due, "Europe/London")}; checker seen 2026-11-30T13:59:57.000Z`;
    expect(sentence(text).value).toBe(
      `did not run: warehouse has no run for 2026-11-16, due at <time data-t="${due}">2026-11-17 06:00 UTC</time>; ` +
        `checker seen <time data-t="${Date.parse("2026-11-30T13:59:57Z")}" data-s>2026-11-30 13:59:57 UTC</time>`,
    );
  });

  it("reads the zone the engine wrote (a repeated hour keeps its offset) and escapes the rest", () => {
    const tokyo = formatInstant(Date.parse("2026-11-19T00:00:00Z"), "Asia/Tokyo");
    expect(tokyo).toBe("2026-11-19 09:00 Asia/Tokyo");
    expect(sentence(`retry at ${tokyo} <b>`).value).toBe(`retry at <time data-t="${Date.parse("2026-11-19T00:00:00Z")}">2026-11-19 00:00 UTC</time> &lt;b&gt;`);
    const repeated = Date.parse("2026-10-25T00:30:00Z"); // 01:30 BST, the first of London's two 01:30s
    expect(formatInstant(repeated, "Europe/London")).toBe("2026-10-25 01:30+01:00 Europe/London");
    expect(sentence(formatInstant(repeated, "Europe/London")).value).toBe(`<time data-t="${repeated}">2026-10-25 00:30 UTC</time>`);
    expect(sentence("2026-10-25 01:30 Not/AZone").value).toBe("2026-10-25 01:30 Not/AZone");
  });
});
