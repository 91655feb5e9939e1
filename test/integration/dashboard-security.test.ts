import { execFile } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { startService, type TestService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

const CLI = join(import.meta.dirname, "../../bin/vehicle-inspection.ts");

describe("dashboard security", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ RATE_LIMIT_SIGN_IN_PER_MINUTE: "1000" });
  });
  afterAll(() => svc.close());

  it("`users create` reads the password from standard input and refuses a short one", async () => {
    const run = (email: string, password: string) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(process.execPath, [CLI, "users", "create", "--email", email, "--account", "cli-co"], {
          env: { ...process.env, ...svc.cliEnv },
        });
        let stdout = "";
        let stderr = "";
        child.stdout!.on("data", (d) => (stdout += d));
        child.stderr!.on("data", (d) => (stderr += d));
        child.on("close", (code) => resolve({ code, stdout, stderr }));
        child.stdin!.end(`${password}\n`);
      });
    const made = await run("Cli.User@Example.com", "a long enough password");
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/^user_[a-z0-9]{24}\n$/);
    const short = await run("other@example.com", "short");
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("at least 10 characters");
    expect((await run("cli.user@example.com", "another long password")).stderr).toContain("already has a user");

    const browser = new DashboardClient(svc.url);
    expect((await browser.signIn("cli.user@example.com", "a long enough password")).status).toBe(303);
  });

  it("sets the session cookie HttpOnly, Secure, SameSite with an expiry, and a new session id at every sign-in", async () => {
    const client = await DashboardClient.signedIn(svc, "flags@example.com", "flags-co");
    const first = client.cookies.get("__Host-vi_session")!;
    // Signed in, the sign-in page sends the browser on; its form is posted from any page's token.
    const again = await client.post(
      "/dashboard/sign-in",
      { email: "flags@example.com", password: "correct horse battery" },
      "/dashboard/test/keys",
    );
    const line = again.headers.getSetCookie().find((c) => c.startsWith("__Host-vi_session="))!;
    expect(line).toMatch(/; HttpOnly/);
    expect(line).toMatch(/; Secure/);
    expect(line).toMatch(/; SameSite=Lax/);
    expect(line).toMatch(/; Max-Age=43200/);
    expect(line).toMatch(/; Path=\//);
    const second = client.cookies.get("__Host-vi_session")!;
    expect(second).not.toBe(first);
    // The session the browser held before signing in again is gone, not merely replaced.
    const stale = new DashboardClient(svc.url);
    stale.cookies.set("__Host-vi_session", first);
    expect((await stale.get("/dashboard/test/keys")).status).toBe(303);
    expect((await client.get("/dashboard/test/keys")).status).toBe(200);
  });

  it("refuses a form without its CSRF token, or with another browser's", async () => {
    const client = await DashboardClient.signedIn(svc, "csrf@example.com", "csrf-co");
    const without = await client.post("/dashboard/test/keys", { _csrf: "" });
    expect(without.status).toBe(403);
    expect(await without.text()).toContain("did not come from this dashboard");
    const other = await DashboardClient.signedIn(svc, "csrf2@example.com", "csrf-co-2");
    const foreign = await client.post("/dashboard/test/keys", { _csrf: await other.csrfToken("/dashboard/test/keys") });
    expect(foreign.status).toBe(403);
    // The sign-in form too (login CSRF): a page elsewhere cannot sign a browser in to its account.
    const bare = new DashboardClient(svc.url);
    const signIn = await fetch(`${svc.url}/dashboard/sign-in`, {
      method: "POST",
      body: new URLSearchParams({ email: "csrf@example.com", password: "correct horse battery" }),
      headers: { "content-type": "application/x-www-form-urlencoded" },
      redirect: "manual",
    });
    expect(signIn.status).toBe(403);
    expect(bare.cookies.size).toBe(0);
    const listed = await (await client.get("/dashboard/test/keys")).text();
    expect(listed).toContain("No test keys yet");
  });

  it("shows only the user's account: another account's inspection and key are 404", async () => {
    const mine = await DashboardClient.signedIn(svc, "mine@example.com", "mine-co");
    const theirs = await DashboardClient.signedIn(svc, "theirs@example.com", "theirs-co");
    const theirKey = await svc.key("test", "theirs-co");
    const inspection = await create(svc, theirKey);
    expect((await theirs.get(`/dashboard/test/inspections/${inspection.id}`)).status).toBe(200);
    expect((await mine.get(`/dashboard/test/inspections/${inspection.id}`)).status).toBe(404);
    // …nor in the other environment of its own account.
    expect((await theirs.get(`/dashboard/live/inspections/${inspection.id}`)).status).toBe(404);
    expect(await (await mine.get("/dashboard/test/inspections")).text()).not.toContain(inspection.id);

    const created = await (await theirs.post("/dashboard/test/keys", {})).text();
    const keyId = /\/dashboard\/test\/keys\/(key_[a-z0-9]+)\/revoke/.exec(created)![1]!;
    expect((await mine.post(`/dashboard/test/keys/${keyId}/revoke`, {}, "/dashboard/test/keys")).status).toBe(404);
    expect((await mine.post(`/dashboard/test/inspections/${inspection.id}/cancel`, {}, "/dashboard/test/inspections")).status).toBe(404);
    expect((await svc.api(theirKey, `/v1/inspections/${inspection.id}`)).status).toBe(200);
  });

  it("sends a signed-out browser to the sign-in page, and back where it was going after", async () => {
    const client = new DashboardClient(svc.url);
    const answer = await client.get("/dashboard/test/keys");
    expect(answer.status).toBe(303);
    expect(answer.headers.get("location")).toBe("/dashboard/sign-in?next=%2Fdashboard%2Ftest%2Fkeys");
    await DashboardClient.signedIn(svc, "next@example.com", "next-co");
    const signedIn = await client.post(
      "/dashboard/sign-in?next=%2Fdashboard%2Ftest%2Fkeys",
      { email: "next@example.com", password: "correct horse battery" },
      "/dashboard/sign-in",
    );
    expect(signedIn.headers.get("location")).toBe("/dashboard/test/keys");
    // Only a dashboard path: never another site.
    const away = await client.post(
      "/dashboard/sign-in?next=https%3A%2F%2Fevil.example",
      { email: "next@example.com", password: "correct horse battery" },
      "/dashboard/test/keys",
    );
    expect(away.headers.get("location")).toBe("/dashboard");
  });

  it("signs out: the session stops working on the server, not only in the browser", async () => {
    const client = await DashboardClient.signedIn(svc, "out@example.com", "out-co");
    const session = client.cookies.get("__Host-vi_session")!;
    expect((await client.post("/dashboard/sign-out", {}, "/dashboard/test/keys")).status).toBe(303);
    expect(client.cookies.has("__Host-vi_session")).toBe(false);
    const replay = new DashboardClient(svc.url);
    replay.cookies.set("__Host-vi_session", session);
    expect((await replay.get("/dashboard/test/keys")).status).toBe(303);
  });

  it("invites a colleague with a one-time link into the same account", async () => {
    const lead = await DashboardClient.signedIn(svc, "lead@example.com", "team-co");
    const page = await (await lead.post("/dashboard/test/team/invites", { email: "New.Hire@Example.com" }, "/dashboard/test/team")).text();
    const link = /(http:\/\/127\.0\.0\.1:\d+\/dashboard\/invite\/[A-Za-z0-9_-]+)/.exec(page)![1]!;
    const path = new URL(link).pathname;
    const invited = new DashboardClient(svc.url);
    expect((await invited.post(path, { password: "short" }, path)).status).toBe(400);
    const joined = await invited.post(path, { password: "a fine long password" }, path);
    expect(joined.status).toBe(303);
    expect(await (await invited.get("/dashboard/test/team")).text()).toContain("lead@example.com");
    // Used once: the link is spent.
    const again = new DashboardClient(svc.url);
    expect((await again.get(path)).status).toBe(410);
    expect((await again.signIn("new.hire@example.com", "a fine long password")).status).toBe(303);
  });

  it("throttles sign-in attempts per address, wrong or right", async () => {
    const throttled = await startService({ RATE_LIMIT_SIGN_IN_PER_MINUTE: "6" });
    onTestFinished(() => throttled.close());
    await DashboardClient.signedIn(throttled, "flags@example.com", "flags-co");
    const client = new DashboardClient(throttled.url);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await client.signIn("nobody@example.com", `wrong password ${i}`)).status);
    expect(statuses.slice(0, 2)).toEqual([401, 401]);
    expect(statuses.at(-1)).toBe(429);
    const late = await client.signIn("flags@example.com", "correct horse battery");
    expect(late.status).toBe(429);
    expect(await late.text()).toContain("Too many attempts");
  });
});
