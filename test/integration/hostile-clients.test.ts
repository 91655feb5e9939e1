import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startService, VALID_VIN, type TestService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

/**
 * What a careless or hostile client sends at the edge: deep JSON, odd encodings and characters,
 * numbers that are not decimal, unknown query parameters, bare HTTP oddities and key guessing.
 * Each is answered in the contract's shape, never 5xx.
 */
let svc: TestService;
let key: string;
let inspectionId: string;
let token: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.key("test");
  ({ id: inspectionId, token } = await create(svc, key));
});
afterAll(() => svc.close());

async function expectError(res: Response, status: number, code: string, param?: string | null) {
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(res.headers.get("request-id")).toMatch(/^req_/);
  expect(body.error.code).toBe(code);
  expect(body.error.request_id).toBe(res.headers.get("request-id"));
  if (param !== undefined) expect(body.error.param).toBe(param);
  return body;
}

const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  svc.api(key, path, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });

describe("deep JSON", () => {
  const deep = (n: number) => `{"vehicle":{"vin":"${VALID_VIN}"},"x":${"[".repeat(n)}${"]".repeat(n)}}`;

  it.each(["/v1/inspections", "cancel"])("is a 400, not a stack overflow, with an Idempotency-Key (%s)", async (where) => {
    const path = where === "cancel" ? `/v1/inspections/${inspectionId}/cancel` : where;
    for (const n of [40, 5_000, 30_000]) {
      const res = await post(path, deep(n), { "idempotency-key": `deep-${where}-${n}` });
      await expectError(res, 400, "parameter_invalid");
    }
  });

  it("is refused on the capture API too", async () => {
    const res = await fetch(`${svc.url}/capture/v1/${token}/vin`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"vin":${"[".repeat(5_000)}${"]".repeat(5_000)}}`,
    });
    await expectError(res, 400, "parameter_invalid");
  });

  it("brackets inside strings do not count", async () => {
    const res = await post("/v1/inspections", JSON.stringify({ vehicle: { vin: VALID_VIN }, reference: "[".repeat(200) }), {
      "idempotency-key": "brackets-in-a-string",
    });
    expect(res.status).toBe(201);
  });
});

describe("strings and encodings", () => {
  it.each([
    ["NUL", "claim\u0000"],
    ["a newline", "claim\n1"],
    ["DEL", "claim\u007f"],
    ["a C1 control", "claim\u0085"],
    ["a right-to-left override", "claim\u202e1001"],
    ["an isolate", "\u2066claim"],
  ])("refuses %s in reference", async (_what, reference) => {
    await expectError(
      await post("/v1/inspections", JSON.stringify({ vehicle: { vin: VALID_VIN }, reference })),
      400,
      "parameter_invalid",
      "reference",
    );
  });

  it("refuses a lone surrogate, escaped in the JSON", async () => {
    await expectError(
      await post("/v1/inspections", `{"vehicle":{"vin":"${VALID_VIN}"},"reference":"claim\\ud800"}`),
      400,
      "parameter_invalid",
      "reference",
    );
  });

  it("takes other Unicode as it is", async () => {
    const res = await post("/v1/inspections", JSON.stringify({ vehicle: { vin: VALID_VIN }, reference: "Schadennr. Ölwechsel 事故 🚗" }));
    expect(res.status).toBe(201);
    expect((await res.json()).reference).toBe("Schadennr. Ölwechsel 事故 🚗");
  });

  it("refuses bytes that are not UTF-8 instead of replacing them", async () => {
    const body = Buffer.concat([Buffer.from(`{"vehicle":{"vin":"${VALID_VIN}"},"reference":"caf`), Buffer.from([0xe9]), Buffer.from('"}')]);
    await expectError(await post("/v1/inspections", body), 400, "body_invalid_json");
  });

  it.each(["utf-16", "latin1", "iso-8859-1"])("refuses JSON declared charset=%s (415)", async (charset) => {
    const res = await post("/v1/inspections", JSON.stringify({ vehicle: { vin: VALID_VIN } }), {
      "content-type": `application/json; charset=${charset}`,
    });
    await expectError(res, 415, "unsupported_media_type");
  });

  it("takes charset=utf-8", async () => {
    const res = await post("/v1/inspections", JSON.stringify({ vehicle: { vin: VALID_VIN } }), {
      "content-type": "application/json; charset=UTF-8",
    });
    expect(res.status).toBe(201);
  });

  it("refuses control characters in the query", async () => {
    await expectError(await svc.api(key, "/v1/inspections?reference=a%00b"), 400, "parameter_invalid", "reference");
  });
});

describe("query parameters", () => {
  it.each(["0x10", "1e2", "+5", "%205", "5%20", "1.0", "-1", "0", "101"])("limit=%s is refused", async (limit) => {
    for (const path of ["/v1/inspections", "/v1/events"])
      await expectError(await svc.api(key, `${path}?limit=${limit}`), 400, "parameter_invalid", "limit");
  });

  it("limit=5 and limit=007 are read as decimal", async () => {
    expect((await svc.api(key, "/v1/inspections?limit=5")).status).toBe(200);
    expect((await svc.api(key, "/v1/inspections?limit=007")).status).toBe(200);
  });

  it("refuses unknown query parameters on every route", async () => {
    const paths = [
      `/v1/inspections/${inspectionId}`,
      `/v1/inspections/${inspectionId}/report`,
      "/v1/events",
      "/v1/events/evt_000000000000000000000000",
      "/v1/media/med_000000000000000000000000/full.jpg",
      "/v1/inspections",
    ];
    for (const path of paths) await expectError(await svc.api(key, `${path}?expand=everything`), 400, "parameter_unknown", "expand");
    await expectError(await post(`/v1/inspections/${inspectionId}/cancel?force=1`, "{}"), 400, "parameter_unknown", "force");
    await expectError(await fetch(`${svc.url}/capture/v1/${token}?debug=1`), 400, "parameter_unknown", "debug");
  });
});

/** Sends raw bytes and returns the whole answer, for what fetch would never send. */
function raw(request: string): Promise<string> {
  const { port } = new URL(svc.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(request));
    let data = "";
    socket.on("data", (chunk) => (data += chunk));
    socket.on("end", () => resolve(data));
    socket.on("close", () => resolve(data));
    socket.on("error", reject);
    setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, 3_000);
  });
}

function parseRaw(answer: string) {
  const [head, body] = answer.split("\r\n\r\n");
  const status = Number(head!.split(" ")[1]);
  const headers = Object.fromEntries(
    head!
      .split("\r\n")
      .slice(1)
      .map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  return { status, headers, error: JSON.parse(body!).error };
}

describe("bare HTTP", () => {
  it("answers a request without Host in the contract's shape", async () => {
    const { status, headers, error } = parseRaw(
      await raw(`GET /v1/inspections HTTP/1.1\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`),
    );
    expect(status).toBe(400);
    expect(error.code).toBe("request_malformed");
    expect(headers["request-id"]).toBe(error.request_id);
  });

  it("answers Expect: 200-ok with 417 in the contract's shape", async () => {
    const { status, headers, error } = parseRaw(
      await raw(`GET /v1/inspections HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n`),
    );
    expect(status).toBe(417);
    expect(error.code).toBe("expectation_failed");
    expect(headers["request-id"]).toBe(error.request_id);
  });

  it("answers CONNECT with 405 in the contract's shape", async () => {
    const { status, headers, error } = parseRaw(await raw(`CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n`));
    expect(status).toBe(405);
    expect(error.code).toBe("method_not_allowed");
    expect(headers["request-id"]).toBe(error.request_id);
  });

  it("still takes Expect: 100-continue", async () => {
    const answer = await raw(
      `GET /v1/inspections?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/HTTP\/1.1 200 OK/);
  });
});

describe("failed authentication", () => {
  it("is limited per client address, before and apart from the per-key limit; a 401 carries WWW-Authenticate and RateLimit-*", async () => {
    const limited = await startService({ RATE_LIMIT_FAILED_AUTH_PER_MINUTE: "5" });
    try {
      const good = await limited.key("test");
      const guess = (i: number) => limited.api(`sk_test_${String(i).padStart(32, "0")}`, "/v1/inspections");
      for (let i = 0; i < 5; i++) {
        const res = await guess(i);
        await expectError(res, 401, "api_key_invalid");
        expect(res.headers.get("www-authenticate")).toBe('Bearer realm="api", error="invalid_token"');
        expect(res.headers.get("ratelimit-limit")).toBe("5");
        expect(res.headers.get("ratelimit-remaining")).toBe(String(4 - i));
        expect(Number(res.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
      }
      // A valid key from that address is never refused nor held: behind one NAT, another client's
      // stale key retried in a loop locks no one else out.
      const stale = `sk_test_${"7".repeat(32)}`;
      const loop = Promise.all(Array.from({ length: 10 }, () => limited.api(stale, "/v1/inspections")));
      const start = performance.now();
      const ok = await limited.api(good, "/v1/inspections");
      expect(ok.status).toBe(200);
      expect(ok.headers.get("ratelimit-limit")).toBe("10000");
      expect(performance.now() - start).toBeLessThan(900);
      expect((await loop).map((r) => r.status)).toEqual(Array(10).fill(429));
      // Past the limit a failure is refused, and held before it is answered: guessing stays slow.
      const began = performance.now();
      const refused = await guess(99);
      await expectError(refused, 429, "rate_limited");
      expect(performance.now() - began).toBeGreaterThanOrEqual(900);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      // A missing key is a failed authentication too.
      expect((await fetch(`${limited.url}/v1/inspections`)).status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it("counts guessed capture tokens too, and never refuses a real one", async () => {
    const limited = await startService({ RATE_LIMIT_FAILED_AUTH_PER_MINUTE: "3" });
    try {
      const { token: real } = await create(limited, await limited.key("test"));
      for (let i = 0; i < 3; i++) await expectError(await fetch(`${limited.url}/capture/v1/guess${i}`), 404, "resource_missing");
      await expectError(await fetch(`${limited.url}/capture/v1/guess9`), 429, "rate_limited");
      expect((await fetch(`${limited.url}/capture/v1/${real}`)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it("a missing key gets the bare challenge", async () => {
    const res = await fetch(`${svc.url}/v1/inspections`);
    await expectError(res, 401, "api_key_missing");
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="api"');
  });

  it("successful requests are limited per key, with RateLimit-* headers", async () => {
    const res = await svc.api(key, "/v1/inspections?limit=1");
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-limit")).toBe("10000");
  });
});
