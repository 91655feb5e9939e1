import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos } from "../helpers/photos.ts";
import { startService, VALID_VIN, type TestService } from "../helpers/service.ts";
import { until } from "../helpers/webhook-receiver.ts";

/**
 * schemathesis fuzzes every operation of /v1 and the capture API from the service's own OpenAPI
 * document (test/fuzz/schemathesis.toml says which checks): no 5xx, and every response valid
 * against the document. Installed from PyPI (test/fuzz/requirements.txt) into a virtual
 * environment outside the repository, once per version.
 */
const run = promisify(execFile);
const HERE = import.meta.dirname;
const REQUIREMENTS = join(HERE, "requirements.txt");
const VERSION = /schemathesis==([\d.]+)/.exec(readFileSync(REQUIREMENTS, "utf8"))![1]!;
const VENV = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "vehicle-inspection", `schemathesis-${VERSION}`);
const SCHEMATHESIS = join(VENV, "bin", "schemathesis");

async function installSchemathesis(): Promise<void> {
  if (existsSync(SCHEMATHESIS)) return;
  // Debian's python3 (with venv); another interpreter on PATH may lack it.
  const python = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  await run(python, ["-m", "venv", VENV]);
  await run(join(VENV, "bin", "pip"), ["install", "--quiet", "--disable-pip-version-check", "-r", REQUIREMENTS], { maxBuffer: 1 << 24 });
}

let svc: TestService;
const env: Record<string, string> = {};

beforeAll(async () => {
  const [, service] = await Promise.all([installSchemathesis(), startService({ RATE_LIMIT_CAPTURE_PER_SECOND: "100000" })]);
  svc = service;
  const key = await svc.key("test");
  const create = async () =>
    (await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, reference: "fuzz" } })).json();

  // A completed inspection, so the report, media and events answer 200 with real bodies.
  const done = await create();
  const base = done.capture_url.replace("/c/", "/capture/v1/");
  const photos = carPhotos(REQUIRED_ANGLES.length);
  for (const [i, angle] of REQUIRED_ANGLES.entries()) {
    await fetch(`${base}/photos/${angle}`, { method: "PUT", body: photos[i]!, headers: { "content-type": "image/jpeg" } });
  }
  await fetch(`${base}/submit`, { method: "POST" });
  await until(
    "completed",
    async () => (await svc.api(key, `/v1/inspections/${done.id}`)).json(),
    (r: { status: string }) => r.status === "completed",
    30_000,
  );
  const report = await (await svc.api(key, `/v1/inspections/${done.id}/report`)).json();
  const events = await (await svc.api(key, "/v1/events?limit=1")).json();

  // An open one, whose capture link the fuzzer uses (and may submit or cancel: 410s are documented).
  const open = await create();
  Object.assign(env, {
    FUZZ_KEY: key,
    FUZZ_TOKEN: open.capture_url.split("/c/")[1],
    FUZZ_INSPECTION_ID: open.id,
    FUZZ_COMPLETED_ID: done.id,
    FUZZ_MEDIA_ID: report.photos[0].media_id,
    FUZZ_EVENT_ID: events.data[0].id,
  });
}, 600_000);
afterAll(() => svc?.close());

it("finds no 5xx and no response off the OpenAPI document, on every operation", async () => {
  const result = await run(SCHEMATHESIS, ["--config-file", join(HERE, "schemathesis.toml"), "run", `${svc.url}/v1/openapi.json`], {
    env: { ...process.env, ...env, NO_COLOR: "1" },
    cwd: tmpdir(), // it keeps a cache directory where it runs
    maxBuffer: 1 << 26,
  }).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: `${error.stdout}\n${error.stderr}` }),
  );
  expect(result.code, result.output.slice(-20_000)).toBe(0);
  // Every operation was reached, the capture API's included.
  expect(result.output).toMatch(/Tested: 20\b/);
}, 600_000);
