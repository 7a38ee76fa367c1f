// A person at the dashboard, as the questions of policy.ask reach them: a session logged in with the dashboard
// credential (its cookie and CSRF token), the open questions listed, and an answer given, as the page does.
import { expect } from "vitest";
import { dashboardLogin } from "./dashboardLogin.js";
import { waitFor } from "./harness.js";
import { raw } from "./rawHttp.js";

export interface QuestionView {
  id: string;
  host: string;
  text: string;
  client: string;
  role: string;
  label: string;
  always: string | null;
  expiresAt: number;
}

/** A person's dashboard: a session (cookie and CSRF token) logged in with the dashboard credential. */
export class Person {
  constructor(
    readonly url: string,
    readonly cookie: string,
    readonly csrf: string,
  ) {}

  static async login(url: string): Promise<Person> {
    const cookie = await dashboardLogin(url);
    const home = await raw(`${url}/`, { headers: { Cookie: cookie } });
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(home.body)?.[1];
    if (!csrf) throw new Error("the dashboard page has no CSRF token");
    return new Person(url, cookie, csrf);
  }

  async questions(): Promise<QuestionView[]> {
    const res = await raw(`${this.url}/dashboard/api/asks`, { headers: { Cookie: this.cookie } });
    expect(res.status, res.body).toBe(200);
    return (JSON.parse(res.body) as { questions: QuestionView[] }).questions;
  }

  async question(label: string): Promise<QuestionView> {
    return await waitFor(`a question about «${label}»`, async () => (await this.questions()).find((q) => q.label === label));
  }

  answer(id: string, answer: "once" | "always" | "deny"): Promise<{ status: number; body: string }> {
    return raw(`${this.url}/dashboard/api/asks/answer`, {
      method: "POST",
      headers: { Cookie: this.cookie, Origin: this.url, "X-CSRF-Token": this.csrf, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ id, answer }).toString(),
    });
  }
}
