import { createUser } from "../../bin/commands/users.ts";
import type { TestService } from "./service.ts";

/**
 * A person's browser, over plain HTTP: it keeps cookies as a browser would (by name, no jar
 * semantics beyond that), reads each form's CSRF token from the page, and posts forms.
 */
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  readonly base: string;

  constructor(base: string) {
    this.base = base;
  }

  static async signedIn(svc: TestService, email: string, account: string, password = "correct horse battery"): Promise<DashboardClient> {
    await createUser(svc.config, email, account, password).catch(() => {});
    const client = new DashboardClient(svc.url);
    const answer = await client.signIn(email, password);
    if (answer.status !== 303) throw new Error(`sign-in answered ${answer.status}`);
    return client;
  }

  async get(path: string): Promise<Response> {
    return this.#keep(await fetch(this.base + path, { headers: this.#headers(), redirect: "manual" }));
  }

  /** Posts a form; `_csrf` is taken from the page `from` (the page the form is on) unless given. */
  async post(path: string, fields: Record<string, string>, from?: string): Promise<Response> {
    const body = new URLSearchParams(fields);
    if (!("_csrf" in fields)) body.set("_csrf", await this.csrfToken(from ?? path));
    return this.#keep(
      await fetch(this.base + path, {
        method: "POST",
        body,
        headers: { ...this.#headers(), "content-type": "application/x-www-form-urlencoded" },
        redirect: "manual",
      }),
    );
  }

  /** Posts a form with files (multipart/form-data, as a form with enctype="multipart/form-data" does); `_csrf` as post does. */
  async postMultipart(path: string, form: FormData, from?: string): Promise<Response> {
    if (!form.has("_csrf")) form.set("_csrf", await this.csrfToken(from ?? path));
    return this.#keep(await fetch(this.base + path, { method: "POST", body: form, headers: this.#headers(), redirect: "manual" }));
  }

  async csrfToken(page: string): Promise<string> {
    const html = await (await this.get(page)).text();
    const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
    if (!token) throw new Error(`no CSRF token on ${page}`);
    return token;
  }

  signIn(email: string, password: string): Promise<Response> {
    return this.post("/dashboard/sign-in", { email, password }, "/dashboard/sign-in");
  }

  #headers(): Record<string, string> {
    return this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ") } : {};
  }

  #keep(response: Response): Response {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const at = pair!.indexOf("=");
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      if (value === "" || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }
}
