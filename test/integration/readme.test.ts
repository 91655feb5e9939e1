import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { DashboardClient } from "../helpers/dashboard-client.ts";
import { freePort } from "../helpers/free-port.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

/**
 * The README's "Try it", run as written: the service as `npm start` runs it (the shipped models
 * included), then every shell block of the section in one bash session from the checkout, as a
 * newcomer pastes them. Two addresses are the test's: the service's port (8080 in the README) and
 * the local receiver `webhooks listen` forwards to (port 3000 in the README); `webhooks listen`,
 * which the README leaves running in a terminal of its own, runs in the background here.
 */
const ROOT = join(import.meta.dirname, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const section = README.slice(README.indexOf("## Try it"), README.indexOf("\n## ", README.indexOf("## Try it") + 1));
const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);

let service: ServiceProcess;
let receiver: WebhookReceiver;
let port: number;
/** The `webhooks listen` process group, ended after the test has seen what it forwarded. */
let listener = 0;
const dataDir = mkdtempSync(join(tmpdir(), "vi-readme-"));

beforeAll(async () => {
  port = await freePort();
  receiver = await new WebhookReceiver().start();
  service = new ServiceProcess({ DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: "info" });
  await service.line((l) => l.msg === "vehicle inspection service started", 120_000);
}, 150_000);
afterAll(async () => {
  try {
    if (listener) process.kill(-listener, "SIGTERM");
  } catch {
    // Already gone: the group ended on its own.
  }
  await service?.stop();
  await receiver?.close();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(join(ROOT, "report.pdf"), { force: true });
});

it("npm start says where the API, its reference, the dashboard and the capture pages are", async () => {
  const where = await service.line((l) => l.msg.startsWith("HTTP listening"));
  const at = `http://localhost:${port}`;
  for (const part of [`${at}/v1`, `${at}/docs`, `${at}/dashboard`, `${at}/c/<token>`]) expect(where.msg).toContain(part);
});

it("the README's Try it commands run as written, and the dashboard user sees what the key made", async () => {
  expect(blocks.length).toBeGreaterThanOrEqual(5);
  const script = blocks
    .join("\n")
    .replaceAll("localhost:8080", `localhost:${port}`)
    .replaceAll("http://localhost:3000/hooks", receiver.url)
    // Left running in a terminal of its own in the README; here in the background, until it listens.
    .replace(
      /^(npx vehicle-inspection webhooks listen .*)$/m,
      'setsid $1 > "$LISTEN_LOG" 2>&1 &\nLISTENER=$!\nuntil grep -q Forwarding "$LISTEN_LOG"; do sleep 0.2; done',
    );
  const listenLog = join(dataDir, "listen.log");
  // npx does not pass a SIGTERM on to the command it runs, which outlived the test: the listener
  // runs in a process group of its own (setsid), and the whole group is ended once its last
  // forward has been seen (ending it with the script raced the completed event's forward).
  const { stdout } = await promisify(execFile)(
    "bash",
    ["-c", `set -eo pipefail\n${script}\necho\necho "ID=$ID"\necho "LISTENER=$LISTENER"`],
    {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LISTEN_LOG: listenLog },
      timeout: 240_000,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  listener = Number(stdout.match(/^LISTENER=(\d+)$/m)?.[1]);
  // The demo went from creation to its report.
  const demoId = stdout.match(/^created (insp_\w+) for 1HGCM82633A004352/m)?.[1];
  expect(demoId, stdout.slice(0, 3_000)).toBeDefined();
  expect(stdout).toContain(`${demoId} is completed`);
  // By hand: created, captured, processed; its report and PDF fetched.
  const id = stdout.match(/^ID=(insp_\w+)$/m)?.[1];
  expect(id).toBeDefined();
  expect(stdout).toContain(`"object":"report","inspection_id":"${id}"`);
  expect(readFileSync(join(ROOT, "report.pdf")).subarray(0, 5).toString()).toBe("%PDF-");
  expect(statSync(join(ROOT, "report.pdf")).size).toBeGreaterThan(10_000);
  // webhooks listen forwarded the by-hand inspection's moves to the local receiver.
  const moves = await until(
    "the by-hand inspection's events forwarded",
    () =>
      receiver
        .events()
        .filter((e) => e.data.id === id)
        .map((e) => e.type),
    (types) => types.includes("inspection.completed"),
  );
  expect(moves).toEqual(expect.arrayContaining(["inspection.created", "inspection.in_progress", "inspection.processing"]));
  // The README's user signs in and sees both inspections: one account with the key and the demo.
  const ann = new DashboardClient(`http://127.0.0.1:${port}`);
  expect((await ann.signIn("ann@example.com", "a long password")).status).toBe(303);
  const list = await (await ann.get("/dashboard/test/inspections")).text();
  expect(list).toContain(id);
  expect(list).toContain(demoId);
}, 300_000);
