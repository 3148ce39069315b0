import { html, type Html } from "../html.ts";
import { page, pageHead, type View } from "../parts.ts";

/** Signing in: the token is exchanged once for an HttpOnly cookie (POST /auth/session), so no script ever holds it. */
export function loginPage(view: View): Html {
  const next = view.url.searchParams.get("next") ?? "/ui";
  const body = html`${pageHead({ title: "Sign in", sub: "This server has tokens: sign in with one (idem tokens create --name NAME --role viewer|operator prints it)." })}
<div class="panel"><form method="post" action="/auth/session" class="stack">
<input type="hidden" name="_csrf" value="${view.csrf}"><input type="hidden" name="next" value="${next.startsWith("/") && !next.startsWith("//") ? next : "/ui"}">
<label>Token<input name="token" type="password" required autocomplete="current-password" autofocus></label>
<div><button class="primary" type="submit">Sign in</button></div>
</form><p class="muted">The token is kept in an HttpOnly, SameSite=Strict cookie; sign out from any page's header.</p></div>`;
  return page(view, { title: "Sign in", active: "", body });
}
