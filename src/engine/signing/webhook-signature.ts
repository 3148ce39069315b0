import { createHmac, timingSafeEqual } from "node:crypto";

/** The header that carries a signed request's timestamp and signature, outgoing (notifiers) and incoming (dataset events). */
export const SIGNATURE_HEADER = "idem-signature";

/**
 * The signature of a signed request, as Stripe and GitHub sign theirs: HMAC-SHA256 keyed by the
 * shared secret over `<unix seconds>.<body>`, in hex. The timestamp is signed too, so a captured
 * request cannot be sent again later with a fresh one.
 */
export function signWebhook(secret: string, timestampSeconds: number, body: string): string {
  return `t=${timestampSeconds},v1=${createHmac("sha256", secret).update(`${timestampSeconds}.${body}`).digest("hex")}`;
}

/**
 * Why a signature header does not prove the body came from a holder of the secret, or null when
 * it does. The header is `t=<unix seconds>,v1=<hex>[,v1=<hex>...]` (several v1 while a secret is
 * rotated). Compared in constant time, so the answer's timing says nothing of the expected value.
 */
export function webhookSignatureFault(request: { secret: string; header: string | undefined; body: string; now: number; toleranceMs: number }): string | null {
  const { header } = request;
  if (header === undefined || header.trim() === "") return "no signature: send the Idem-Signature header (t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">)";
  const parts = header.split(",").map((part) => part.trim().split("="));
  const timestamps = parts.filter(([k]) => k === "t").map(([, v]) => v ?? "");
  const signatures = parts.filter(([k]) => k === "v1").map(([, v]) => v ?? "");
  if (timestamps.length !== 1 || !/^\d{1,12}$/.test(timestamps[0]!) || signatures.length === 0) {
    return "malformed signature: expected t=<unix seconds>,v1=<hex>";
  }
  const seconds = Number(timestamps[0]);
  const skewMs = Math.abs(request.now - seconds * 1000);
  if (skewMs > request.toleranceMs) {
    return `stale signature: its timestamp is ${Math.round(skewMs / 1000)} s from the server's clock (at most ${Math.round(request.toleranceMs / 1000)} s)`;
  }
  const expected = Buffer.from(createHmac("sha256", request.secret).update(`${seconds}.${request.body}`).digest("hex"));
  const matches = signatures.some((sent) => {
    const given = Buffer.from(sent.toLowerCase());
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches ? null : "the signature does not match the body and timestamp under the configured secret";
}
