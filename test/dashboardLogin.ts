// A dashboard session as a person opens one: the login form's CSRF cookie and field, then the MCP token posted.
import { MCP_TOKEN } from "./harness.js";
import { cookieOf, raw } from "./rawHttp.js";

/** Logs in to the dashboard of the broker at `url`; returns the session cookie (name=value). */
export async function dashboardLogin(url: string, token = MCP_TOKEN): Promise<string> {
  const form = await raw(`${url}/login`);
  const loginCookie = cookieOf(form, "tabrelay_login_");
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (!loginCookie || !csrf) throw new Error("the login form lacks its CSRF cookie or field");
  const login = await raw(`${url}/login`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: url, Cookie: loginCookie },
    body: new URLSearchParams({ csrf, token }).toString(),
  });
  const cookie = cookieOf(login, "tabrelay_session_");
  if (login.status !== 303 || !cookie) throw new Error(`login failed: ${login.status}`);
  return cookie;
}
