// A dashboard session as a person opens one: the login form's CSRF cookie and field, then the dashboard token posted
// (the broker's own, or a team user's trd_ one; never an MCP token, which the login refuses).
import { DASHBOARD_TOKEN } from "./harness.js";
import { cookieOf, raw, type RawResponse } from "./rawHttp.js";

/** The login form of the broker at `url` fetched, then posted with `token`: the answer to the post (303 when it took it). */
export async function postLogin(url: string, token: string): Promise<RawResponse> {
  const form = await raw(`${url}/login`);
  const loginCookie = cookieOf(form, "tabrelay_login_");
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)?.[1];
  if (!loginCookie || !csrf) throw new Error("the login form lacks its CSRF cookie or field");
  return raw(`${url}/login`, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: url, Cookie: loginCookie },
    body: new URLSearchParams({ csrf, token }).toString(),
  });
}

/** Logs in to the dashboard of the broker at `url`; returns the session cookie (name=value). */
export async function dashboardLogin(url: string, token = DASHBOARD_TOKEN): Promise<string> {
  const login = await postLogin(url, token);
  const cookie = cookieOf(login, "tabrelay_session_");
  if (login.status !== 303 || !cookie) throw new Error(`login failed: ${login.status}`);
  return cookie;
}
