import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService, VALID_VIN, OTHER_VALID_VIN, type TestService } from "../helpers/service.ts";
import { create as createMade, walkaround } from "../helpers/walkaround.ts";

let svc: TestService;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.key("test");
});
afterAll(() => svc.close());

const create = (k: string, body: unknown, headers: Record<string, string> = {}) =>
  svc.api(k, "/v1/inspections", { method: "POST", json: body, headers });

function expectError(body: any, type: string, code: string, param?: string | null) {
  expect(body.error.type).toBe(type);
  expect(body.error.code).toBe(code);
  expect(body.error.message).toMatch(/\S/);
  expect(body.error.request_id).toMatch(/^req_[a-z0-9]{24}$/);
  if (param !== undefined) expect(body.error.param).toBe(param);
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|node_modules|stack/i);
}

describe("POST /v1/inspections", () => {
  it("creates an inspection: 201, Location, the contract's object, VIN normalised and decoded (in the 201, or soon after)", async () => {
    const res = await create(key, {
      reference: "claim-42",
      vehicle: { vin: ` ${VALID_VIN.toLowerCase()} ` },
      notify_url: "http://127.0.0.1:9/hook",
    });
    expect(res.status).toBe(201);
    const body = await res.json();
    expect(res.headers.get("location")).toBe(`/v1/inspections/${body.id}`);
    expect(res.headers.get("request-id")).toMatch(/^req_[a-z0-9]{24}$/);
    expect(body).toMatchObject({
      object: "inspection",
      status: "created",
      livemode: false,
      reference: "claim-42",
      vehicle: { vin: VALID_VIN },
      notify_url: "http://127.0.0.1:9/hook",
      submitted_at: null,
      completed_at: null,
      canceled_at: null,
      report_url: null,
      summary: null,
      failure: null,
    });
    expect(body.id).toMatch(/^insp_[a-z0-9]{24}$/);
    expect(body.capture_url).toMatch(new RegExp(`^${svc.url}/c/[A-Za-z0-9_-]{43}$`));
    expect(body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Date.parse(body.expires_at) - Date.parse(body.created_at)).toBe(7 * 24 * 3600 * 1000);
    // Within VIN_DECODE_TIMEOUT_MS the 201 has them; the decoder's first decode (it unpacks its
    // database) can take longer on a busy machine, and then they are recorded when it ends.
    const decoded = { make: "Honda", model: "Accord", year: 2003 };
    if (body.vehicle.make !== null) expect(body.vehicle).toEqual({ vin: VALID_VIN, ...decoded });
    await expect
      .poll(async () => (await (await svc.api(key, `/v1/inspections/${body.id}`)).json()).vehicle)
      .toEqual({ vin: VALID_VIN, ...decoded });
  });

  it("records make, model and year decoded past the create's budget once the decode ends", async () => {
    // A budget no decode meets: the create answers without them, as on a busy machine's cold decoder.
    const slow = await startService({ VIN_DECODE_TIMEOUT_MS: "1" });
    try {
      const slowKey = await slow.key("test");
      const made = await (
        await slow.api(slowKey, "/v1/inspections", { method: "POST", json: { vehicle: { vin: OTHER_VALID_VIN } } })
      ).json();
      expect(made.vehicle).toEqual({ vin: OTHER_VALID_VIN, make: null, model: null, year: null });
      // Before, the decode was aborted at the budget and nothing was ever recorded.
      const read = async () => (await (await slow.api(slowKey, `/v1/inspections/${made.id}`)).json()).vehicle;
      await expect.poll(read, { timeout: 60_000 }).toMatchObject({ vin: OTHER_VALID_VIN, make: "Tesla", model: "Model 3" });
    } finally {
      await slow.close();
    }
  }, 120_000);

  // Embedded only: the restart keeps DATA_DIR, where the other compositions' stores are their servers'.
  it.skipIf(process.env.VI_TEST_COMPOSITION)(
    "a VIN left undecoded by a stopped process is decoded at the next read, and the report stored before shows it",
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "vi-vin-restart-"));
      // A vPIC database that is not one: every decode of this process fails, as one stopped
      // mid-decode never ends; the inspection is completed and its report stored without make.
      mkdirSync(join(dataDir, "vpic"));
      writeFileSync(join(dataDir, "vpic", "vpic.lite.db"), "not a database");
      let svc1: TestService | undefined = await startService({ DATA_DIR: dataDir });
      try {
        const key1 = await svc1.key("test");
        const made = await createMade(svc1, key1);
        expect((await walkaround(svc1, key1, made, { confirmVin: false })).status).toBe("completed");
        const report = async (on: TestService) => (await (await on.api(key1, `/v1/inspections/${made.id}/report`)).json()).vehicle;
        expect(await report(svc1)).toMatchObject({ vin: VALID_VIN, make: null, model: null, year: null });
        await svc1.close();
        svc1 = undefined;

        // The restart, with the decoder working again.
        rmSync(join(dataDir, "vpic"), { recursive: true });
        const svc2 = await startService({ DATA_DIR: dataDir });
        try {
          // Before, nothing decoded the VIN again: make, model and year stayed null for good.
          const read = async () => (await (await svc2.api(key1, `/v1/inspections/${made.id}`)).json()).vehicle;
          const accord = { vin: VALID_VIN, make: "Honda", model: "Accord", year: 2003 };
          await expect.poll(read, { timeout: 60_000 }).toEqual(accord);
          // And the report, stored once before the decode, shows them.
          expect(await report(svc2)).toMatchObject(accord);
        } finally {
          await svc2.close();
        }
      } finally {
        await svc1?.close();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
    180_000,
  );

  it.each([
    [{}, "parameter_missing", "vehicle"],
    [{ vehicle: {} }, "parameter_missing", "vehicle.vin"],
    [{ vehicle: { vin: "1HGCM82633A00435" } }, "parameter_invalid", "vehicle.vin"],
    [{ vehicle: { vin: "1HGCM82633A0043I2" } }, "parameter_invalid", "vehicle.vin"],
    [{ vehicle: { vin: "1HGCM82643A004352" } }, "parameter_invalid", "vehicle.vin"],
    [{ vehicle: { vin: VALID_VIN, colour: "red" } }, "parameter_unknown", "vehicle.colour"],
    [{ vehicle: { vin: VALID_VIN }, extra: 1 }, "parameter_unknown", "extra"],
    [{ vehicle: { vin: VALID_VIN }, reference: "" }, "parameter_invalid", "reference"],
    [{ vehicle: { vin: VALID_VIN }, reference: "x".repeat(256) }, "parameter_invalid", "reference"],
    [{ vehicle: { vin: VALID_VIN }, notify_url: "not a url" }, "parameter_invalid", "notify_url"],
    [{ vehicle: { vin: VALID_VIN }, notify_url: "ftp://example.com/x" }, "parameter_invalid", "notify_url"],
    [{ vehicle: { vin: VALID_VIN }, notify_url: `https://example.com/${"a".repeat(2048)}` }, "parameter_invalid", "notify_url"],
    [[1, 2], "parameter_invalid", null],
  ])("refuses %j with 400 %s", async (body, code, param) => {
    const res = await create(key, body);
    expect(res.status).toBe(400);
    expectError(await res.json(), "invalid_request_error", code, param);
  });

  it("accepts a non-North-American VIN without a check digit", async () => {
    const res = await create(key, { vehicle: { vin: "WVWZZZ1JZXW000001" } });
    expect(res.status).toBe(201);
  });

  it("refuses malformed JSON, a non-JSON content type and a body over 64 KiB", async () => {
    let res = await svc.api(key, "/v1/inspections", { method: "POST", body: "{nope", headers: { "content-type": "application/json" } });
    expect(res.status).toBe(400);
    expectError(await res.json(), "invalid_request_error", "body_invalid_json");

    res = await svc.api(key, "/v1/inspections", {
      method: "POST",
      body: "vin=1",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(res.status).toBe(415);
    expectError(await res.json(), "invalid_request_error", "unsupported_media_type");

    res = await create(key, { vehicle: { vin: VALID_VIN }, reference: "x".repeat(70 * 1024) });
    expect(res.status).toBe(413);
    expectError(await res.json(), "invalid_request_error", "body_too_large");
  });

  it("requires https notify_url for live keys", async () => {
    const live = await svc.key("live");
    const res = await create(live, { vehicle: { vin: VALID_VIN }, notify_url: "http://127.0.0.1:9/hook" });
    expect(res.status).toBe(400);
    expectError(await res.json(), "invalid_request_error", "parameter_invalid", "notify_url");
    const ok = await create(live, { vehicle: { vin: VALID_VIN }, notify_url: "https://127.0.0.1:9/hook" });
    expect(ok.status).toBe(201);
    expect((await ok.json()).livemode).toBe(true);
  });
});

describe("authentication", () => {
  it.each([
    [undefined, "api_key_missing"],
    ["Basic abc", "api_key_invalid"],
    ["Bearer sk_test_short", "api_key_invalid"],
    [`Bearer sk_test_${"a".repeat(40)}`, "api_key_invalid"],
  ])("Authorization %s → 401 %s", async (header, code) => {
    const res = await fetch(`${svc.url}/v1/inspections`, { headers: header ? { authorization: header } : {} });
    expect(res.status).toBe(401);
    expectError(await res.json(), "authentication_error", code);
  });

  it("a revoked key is 401 from the next request on", async () => {
    const { revokeKey, listKeys } = await import("../../bin/commands/keys.ts");
    const k = await svc.key("test", "revoking");
    expect((await svc.api(k, "/v1/inspections")).status).toBe(200);
    const id = (await listKeys(svc.config)).find((line) => line.includes("revoking"))!.split("\t")[0]!;
    expect(await revokeKey(svc.config, id)).toBe(true);
    const res = await svc.api(k, "/v1/inspections");
    expect(res.status).toBe(401);
    expectError(await res.json(), "authentication_error", "api_key_invalid");
  });
});

describe("isolation between accounts and environments", () => {
  it("another account's or environment's objects are 404, and absent from lists", async () => {
    const mine = await (await create(key, { vehicle: { vin: VALID_VIN }, reference: "isolation" })).json();
    const otherAccount = await svc.key("test", "globex");
    const sameAccountLive = await svc.key("live", "acme");
    for (const k of [otherAccount, sameAccountLive]) {
      for (const [method, path] of [
        ["GET", `/v1/inspections/${mine.id}`],
        ["GET", `/v1/inspections/${mine.id}/report`],
        ["POST", `/v1/inspections/${mine.id}/cancel`],
      ] as const) {
        const res = await svc.api(k, path, { method });
        expect(res.status, `${method} ${path}`).toBe(404);
        expectError(await res.json(), "not_found_error", "resource_missing", "id");
      }
      const list = await (await svc.api(k, "/v1/inspections?limit=100")).json();
      expect(list.data.map((i: any) => i.id)).not.toContain(mine.id);
      const cursor = await svc.api(k, `/v1/inspections?cursor=${mine.id}`);
      expect(cursor.status).toBe(400);
      const events = await (await svc.api(k, "/v1/events?limit=100")).json();
      expect(events.data.map((e: any) => e.data.id)).not.toContain(mine.id);
    }
    expect((await svc.api(key, `/v1/inspections/${mine.id}`)).status).toBe(200);
  });
});

describe("GET /v1/inspections", () => {
  it("pages newest first with a cursor, never repeating or skipping while inspections are created", async () => {
    const k = await svc.key("test", "pager");
    const before: string[] = [];
    for (let i = 0; i < 23; i++) before.push((await (await create(k, { vehicle: { vin: VALID_VIN }, reference: `p${i}` })).json()).id);
    const seen: string[] = [];
    const during: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await svc.api(k, `/v1/inspections?limit=5${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      const page = await res.json();
      expect(page.object).toBe("list");
      seen.push(...page.data.map((i: any) => i.id));
      expect(page.next_cursor).toBe(page.has_more ? page.data.at(-1).id : null);
      cursor = page.next_cursor;
      // New inspections arrive while paging; they must not make a page repeat or skip any other.
      during.push((await (await create(k, { vehicle: { vin: VALID_VIN } })).json()).id);
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.filter((id) => !during.includes(id)).sort()).toEqual([...before].sort());
  });

  it("orders by created_at then id, descending", async () => {
    const page = await (await svc.api(key, "/v1/inspections?limit=100")).json();
    const keys = page.data.map((i: any) => [i.created_at, i.id].join(" "));
    expect(keys).toEqual([...keys].sort().reverse());
  });

  it("filters by status, reference and vin", async () => {
    const k = await svc.key("test", "filters");
    const a = await (await create(k, { vehicle: { vin: VALID_VIN }, reference: "alpha" })).json();
    await create(k, { vehicle: { vin: OTHER_VALID_VIN }, reference: "beta" });
    const byRef = await (await svc.api(k, "/v1/inspections?reference=alpha")).json();
    expect(byRef.data.map((i: any) => i.id)).toEqual([a.id]);
    const byVin = await (await svc.api(k, `/v1/inspections?vin=${OTHER_VALID_VIN.toLowerCase()}`)).json();
    expect(byVin.data.map((i: any) => i.reference)).toEqual(["beta"]);
    await svc.api(k, `/v1/inspections/${a.id}/cancel`, { method: "POST" });
    const canceled = await (await svc.api(k, "/v1/inspections?status=canceled")).json();
    expect(canceled.data.map((i: any) => i.id)).toEqual([a.id]);
    const created = await (await svc.api(k, "/v1/inspections?status=created")).json();
    expect(created.data.map((i: any) => i.reference)).toEqual(["beta"]);
  });

  it.each([
    ["limit=0", "limit"],
    ["limit=101", "limit"],
    ["limit=abc", "limit"],
    ["cursor=insp_doesnotexist000000000000", "cursor"],
    ["status=bogus", "status"],
    ["sort=asc", "sort"],
  ])("?%s → 400 naming %s", async (query, param) => {
    const res = await svc.api(key, `/v1/inspections?${query}`);
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.param).toBe(param);
    expect(body.error.type).toBe("invalid_request_error");
  });

  it("defaults to 10 and allows 100", async () => {
    const k = await svc.key("test", "limits");
    for (let i = 0; i < 12; i++) await create(k, { vehicle: { vin: VALID_VIN } });
    expect((await (await svc.api(k, "/v1/inspections")).json()).data).toHaveLength(10);
    const all = await (await svc.api(k, "/v1/inspections?limit=100")).json();
    expect(all.data).toHaveLength(12);
    expect(all.has_more).toBe(false);
  });
});

describe("retrieve, cancel, report", () => {
  it("retrieves; 404 for an unknown id", async () => {
    const made = await (await create(key, { vehicle: { vin: VALID_VIN } })).json();
    const got = await (await svc.api(key, `/v1/inspections/${made.id}`)).json();
    expect(got).toEqual({ ...made, updated_at: got.updated_at });
    const res = await svc.api(key, "/v1/inspections/insp_000000000000000000000000");
    expect(res.status).toBe(404);
    expectError(await res.json(), "not_found_error", "resource_missing", "id");
  });

  it("cancels (200, canceled), cancelling again changes nothing; the report is 409 report_not_ready before, report_unavailable after", async () => {
    const made = await (await create(key, { vehicle: { vin: VALID_VIN } })).json();
    const report = await svc.api(key, `/v1/inspections/${made.id}/report`);
    expect(report.status).toBe(409);
    expectError(await report.json(), "conflict_error", "report_not_ready");

    const res = await svc.api(key, `/v1/inspections/${made.id}/cancel`, { method: "POST", json: {} });
    expect(res.status).toBe(200);
    const canceled = await res.json();
    expect(canceled.status).toBe("canceled");
    expect(canceled.canceled_at).toMatch(/Z$/);
    expect(canceled.capture_url).toBeNull();

    const again = await svc.api(key, `/v1/inspections/${made.id}/cancel`, { method: "POST" });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(canceled);

    const never = await svc.api(key, `/v1/inspections/${made.id}/report`);
    expect(never.status).toBe(409);
    expectError(await never.json(), "conflict_error", "report_unavailable");

    const body = await svc.api(key, `/v1/inspections/${made.id}/cancel`, { method: "POST", json: { reason: "x" } });
    expect(body.status).toBe(400);
    expectError(await body.json(), "invalid_request_error", "parameter_unknown", "reason");
  });

  it("answers 405 for a wrong method and 404 for an unknown path, in the contract's shape", async () => {
    const res = await svc.api(key, "/v1/inspections/insp_000000000000000000000000", { method: "DELETE" });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toContain("GET");
    expectError(await res.json(), "invalid_request_error", "method_not_allowed");
    const nope = await svc.api(key, "/v1/vehicles");
    expect(nope.status).toBe(404);
    expectError(await nope.json(), "not_found_error", "resource_missing");
  });

  it("answers a malformed path, and a path segment longer than any id, in the contract's shape with a Request-Id", async () => {
    // The router rejects these before any route or hook runs.
    for (const [path, status, type, code] of [
      ["/v1/inspections/%zz", 400, "invalid_request_error", "parameter_invalid"],
      ["/capture/v1/%E0%A4%A/submit", 400, "invalid_request_error", "parameter_invalid"],
      [`/v1/inspections/insp_${"a".repeat(200)}`, 404, "not_found_error", "resource_missing"],
      [`/capture/v1/${"t".repeat(200)}`, 404, "not_found_error", "resource_missing"],
    ] as const) {
      const res = await svc.api(key, path);
      expect(res.status, path).toBe(status);
      const body = await res.json();
      expectError(body, type, code, null);
      expect(res.headers.get("request-id")).toBe(body.error.request_id);
    }
  });
});

describe("probes", () => {
  it("answers /healthz and /readyz without a key", async () => {
    expect(await (await fetch(`${svc.url}/healthz`)).json()).toEqual({ status: "ok" });
    expect(await (await fetch(`${svc.url}/readyz`)).json()).toEqual({ status: "ready" });
  });
});

describe("GET /v1/openapi.json", () => {
  it("documents every /v1 and capture endpoint from the same schemas", async () => {
    const doc = await (await fetch(`${svc.url}/v1/openapi.json`)).json();
    expect(doc.openapi).toBe("3.1.0");
    const paths = Object.keys(doc.paths);
    for (const p of [
      "/v1/inspections",
      "/v1/inspections/{id}",
      "/v1/inspections/{id}/cancel",
      "/v1/inspections/{id}/report",
      "/v1/media/{id}/full.jpg",
      "/v1/events",
      "/v1/events/{id}",
      "/capture/v1/{token}",
      "/capture/v1/{token}/photos/{angle}",
      "/capture/v1/{token}/vin",
      "/capture/v1/{token}/submit",
    ]) {
      expect(paths).toContain(p);
    }
    const create = doc.paths["/v1/inspections"].post;
    const body = create.requestBody.content["application/json"].schema;
    expect(body.additionalProperties).toBe(false);
    expect(body.required).toEqual(["vehicle"]);
    expect(create.responses["201"].content["application/json"].schema.$ref).toBe("#/components/schemas/Inspection");
    expect(Object.keys(doc.components.schemas.Inspection.properties)).toContain("capture_url");
    expect(doc.components.schemas.Error.properties.error.required).toEqual(["type", "code", "message", "param", "request_id"]);
  });
});
