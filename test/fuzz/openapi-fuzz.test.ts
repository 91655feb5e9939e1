import { execFile } from "node:child_process";
import { randomInt } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startService, VALID_VIN, type TestService } from "../helpers/service.ts";
import { walkaround } from "../helpers/walkaround.ts";

/**
 * schemathesis fuzzes every operation of /v1 and the capture API from the service's own OpenAPI
 * document, with every check and every phase, stateful included (test/fuzz/schemathesis.toml, and
 * test/fuzz/hooks.py for what the document states in words): no 5xx, every response as the document
 * says, nothing it allows refused, nothing it forbids accepted, a 405 with Allow for every method it
 * does not list, and every operation reached by following its links. Twice: with the configuration's
 * fixed seed, and with a fresh seed each run, printed so that a failure can be replayed
 * (`schemathesis … run --seed N`). Installed from PyPI (test/fuzz/requirements.txt) into a virtual
 * environment outside the repository, once per version.
 *
 * What a run proves is bounded by work, not time: each phase runs its configured examples to the
 * end, however busy the machine (no --max-time: under a time budget, a run on two cores at a load of
 * about 13 stopped its stateful phase before it had followed the links to a photo, and the check that
 * the links reach every operation failed for time, not for the document). One stateful pass's random
 * walk follows a rarely taken link only a few times (a photo's RetrievePhoto: 1 to 20 times in 150
 * scenarios, over nine passes of eight seeds), so while an operation is unreached the seed's run
 * gets further stateful passes, with the seeds after it, STATEFUL_PASSES in all; an operation that no
 * link leads to stays unreached in every pass and fails the test.
 */
const run = promisify(execFile);
const HERE = import.meta.dirname;
const REQUIREMENTS = join(HERE, "requirements.txt");
const VERSION = /schemathesis==([\d.]+)/.exec(readFileSync(REQUIREMENTS, "utf8"))![1]!;
const VENV = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "vehicle-inspection", `schemathesis-${VERSION}`);
const SCHEMATHESIS = join(VENV, "bin", "schemathesis");
const FIXED_SEED = Number(/^seed = (\d+)$/m.exec(readFileSync(join(HERE, "schemathesis.toml"), "utf8"))![1]);
/** Stateful passes a seed's run may take in all while some operation is unreached by links (see above). */
const STATEFUL_PASSES = 5;
/** A bound for a hung run, not a budget: at a load of about 19 on two cores one run of every phase took 194 s. */
const TEST_TIMEOUT_MS = 1_200_000;

async function installSchemathesis(): Promise<void> {
  if (existsSync(SCHEMATHESIS)) return;
  // Debian's python3 (with venv); another interpreter on PATH may lack it.
  const python = existsSync("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  await run(python, ["-m", "venv", VENV]);
  await run(join(VENV, "bin", "pip"), ["install", "--quiet", "--disable-pip-version-check", "-r", REQUIREMENTS], { maxBuffer: 1 << 24 });
}

let svc: TestService;
let operations: number;
/** `METHOD path` of every operation that takes an identifier in its path: each must be reached by links. */
let identified: string[];
const env: Record<string, string> = {};
const reports = mkdtempSync(join(tmpdir(), "vi-fuzz-"));

beforeAll(async () => {
  const [, service] = await Promise.all([
    installSchemathesis(),
    // Test deliveries go to whatever URL the fuzzer draws: a short timeout keeps each one short.
    startService({ RATE_LIMIT_CAPTURE_PER_SECOND: "100000", WEBHOOK_TIMEOUT_MS: "2000" }),
  ]);
  svc = service;
  const key = await svc.key("test");
  const create = async (notify_url?: string) =>
    (
      await svc.api(key, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, reference: "fuzz", notify_url } })
    ).json();

  // A completed inspection, so the report, media and events answer 200 with real bodies; with a
  // notify_url (nothing listens there), so its events can be resent.
  const done = await create("http://127.0.0.1:9/hook");
  const capture = { id: done.id, token: done.capture_token, base: `${svc.url}/capture/v1/${done.capture_token}` };
  expect((await walkaround(svc, key, capture, { confirmVin: false })).status).toBe("completed");
  const report = await (await svc.api(key, `/v1/inspections/${done.id}/report`)).json();
  const events = await (await svc.api(key, "/v1/events?limit=1")).json();
  const open = await create();
  const doc = await (await fetch(`${svc.url}/v1/openapi.json`)).json();
  operations = Object.values<Record<string, unknown>>(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0);
  identified = Object.entries<Record<string, unknown>>(doc.paths)
    .filter(([path]) => path.includes("{"))
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`));
  Object.assign(env, {
    FUZZ_URL: svc.url,
    FUZZ_KEY: key,
    // The marker hooks.py replaces with a fresh link per capture case.
    FUZZ_TOKEN: open.capture_token,
    FUZZ_INSPECTION_ID: open.id,
    FUZZ_COMPLETED_ID: done.id,
    FUZZ_MEDIA_ID: report.photos[0].media_id,
    FUZZ_EVENT_ID: events.data[0].id,
  });
}, 600_000);
afterAll(async () => {
  await svc?.close();
  rmSync(reports, { recursive: true, force: true });
});

/** One schemathesis run with `seed` (`phases`: all, or those named): its exit code, the tail of its output, and its JSON report. */
async function schemathesis(seed: number, reached: string, phases?: string) {
  const report = join(reports, `${seed}.json`);
  const args = ["--config-file", join(HERE, "schemathesis.toml"), "run", `${svc.url}/v1/openapi.json`, "--seed", String(seed)];
  if (phases) args.push("--phases", phases);
  args.push("--report", "json", "--report-json-path", report);
  const result = await run(SCHEMATHESIS, args, {
    env: { ...process.env, ...env, NO_COLOR: "1", SCHEMATHESIS_HOOKS: join(HERE, "hooks.py"), FUZZ_REACHED: reached },
    cwd: tmpdir(), // it keeps a cache directory where it runs
    maxBuffer: 1 << 26,
  }).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: `${error.stdout}\n${error.stderr}` }),
  );
  const replay = `seed ${seed}: schemathesis --config-file test/fuzz/schemathesis.toml run <url>/v1/openapi.json --seed ${seed}${phases ? ` --phases ${phases}` : ""}`;
  return { ...result, replay, report: existsSync(report) ? JSON.parse(readFileSync(report, "utf8")) : null };
}

/**
 * The run of `seed`, every phase, then stateful passes with the seeds after it while an operation is
 * unreached by links: each run, and what none of them reached.
 */
async function fuzz(seed: number) {
  const reached = join(reports, `${seed}.reached`);
  const unreached = () => {
    const got = new Set(existsSync(reached) ? readFileSync(reached, "utf8").split("\n") : []);
    return identified.filter((label) => !got.has(label));
  };
  const runs = [await schemathesis(seed, reached)];
  for (let pass = 1; pass < STATEFUL_PASSES && unreached().length > 0; pass++) {
    console.log(`openapi-fuzz: seed ${seed} left ${unreached().join(", ")} unreached; stateful pass ${pass + 1} (seed ${seed + pass})`);
    runs.push(await schemathesis(seed + pass, reached, "stateful"));
  }
  return { runs, unreached: unreached() };
}

function expectClean({ runs, unreached }: Awaited<ReturnType<typeof fuzz>>) {
  for (const result of runs) {
    const why = `${result.replay}\n${result.output.slice(-20_000)}`;
    expect(result.code, why).toBe(0);
    expect(result.report.failures, why).toEqual([]);
    expect(result.report.errors, why).toEqual([]);
  }
  // Every operation was tested, and none only ever answered 404: each is reached with real identifiers.
  const [first] = runs;
  const why = `${first!.replay}\n${first!.output.slice(-20_000)}`;
  expect(first!.report.operations.tested, why).toBe(operations);
  expect(first!.report.warnings.missing_test_data, why).toEqual([]);
  // Every operation that takes an identifier, by following the document's links (test/fuzz/hooks.py's reached_by_links).
  const passes = runs.map((r) => r.replay.split(":")[0]).join(", ");
  expect(unreached, `not reached by following the document's links in ${runs.length} stateful passes (${passes})`).toEqual([]);
}

it(
  "finds nothing with the fixed seed: every check, every phase, every operation reached",
  async () => {
    expectClean(await fuzz(FIXED_SEED));
  },
  TEST_TIMEOUT_MS,
);

it(
  "finds nothing with a fresh seed (printed, to replay a failure)",
  async () => {
    const seed = randomInt(1, 2 ** 31);
    console.log(`openapi-fuzz: fresh schemathesis seed ${seed}`);
    expectClean(await fuzz(seed));
  },
  TEST_TIMEOUT_MS,
);
