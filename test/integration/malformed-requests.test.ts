import { connect } from "node:net";
import { request } from "undici";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startService, VALID_VIN, type TestService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

/**
 * A sweep of malformed requests over every route: bodies, content types, query strings, ids, paths,
 * methods, auth headers, capture tokens and photos. Whatever a client sends, the answer is no 5xx,
 * carries a Request-Id, and any error is in the contract's shape.
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

type Probe = { method: string; path: string; headers?: Record<string, string>; body?: string | Buffer };

/** What is wrong with the answer to one probe; empty when nothing is. */
async function violations({ method, path, headers = {}, body }: Probe): Promise<string[]> {
  const res = await request(svc.url + path, { method: method as "GET", headers, body });
  const text = await res.body.text();
  const where = `${method} ${path.slice(0, 80)} ${String(body ?? "").slice(0, 40)} → ${res.statusCode}`;
  const found: string[] = [];
  if (res.statusCode >= 500) found.push(`${where}: server error ${text.slice(0, 200)}`);
  if (!res.headers["request-id"]) found.push(`${where}: no Request-Id`);
  if (res.statusCode >= 400) {
    let error: Record<string, unknown> | undefined;
    try {
      error = (JSON.parse(text) as { error?: Record<string, unknown> }).error;
    } catch {
      // Reported below.
    }
    const shaped =
      error &&
      ["type", "code", "message", "request_id"].every((k) => typeof error[k] === "string") &&
      "param" in error &&
      error.request_id === res.headers["request-id"];
    if (!shaped) found.push(`${where}: error body off the contract's shape: ${text.slice(0, 200)}`);
  }
  return found;
}

function probes(): Probe[] {
  const auth = { authorization: `Bearer ${key}` };
  const vin = `{"vehicle":{"vin":"${VALID_VIN}"}`;
  const bodies = [
    "",
    "{",
    "null",
    "[]",
    "1",
    '"x"',
    "{}",
    "\u0000",
    '{"vehicle":null}',
    '{"vehicle":[]}',
    '{"vehicle":{"vin":1}}',
    `{"vehicle":{"vin":"${"A".repeat(60_000)}"}}`,
    `${vin},"reference":""}`,
    `${vin},"reference":{}}`,
    `${vin},"notify_url":"ftp://x"}`,
    `${vin},"notify_url":"http://%zz/"}`,
    `${vin},"notify_url":"http://[::ffff:127.0.0.1]/"}`,
    `{"__proto__":{"x":1},${vin.slice(1)}}`,
    `{"vehicle":{"vin":"${VALID_VIN}","extra":1}}`,
    `{"a":${"[".repeat(5000)}${"]".repeat(5000)}}`,
    '{"vehicle":{"vin":"\\ud800"}}',
  ];
  const types = [
    "application/json",
    "application/json; charset=latin1",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "application/json;;",
    "",
  ];
  const queries = [
    "limit=abc",
    "limit=-1",
    "limit=0",
    "limit=101",
    "limit=1e309",
    "limit=1.5",
    "limit=",
    "limit=1&limit=2",
    "cursor=",
    "cursor=insp_zzzzzzzzzzzzzzzzzzzzzzzz",
    `cursor=${"x".repeat(3000)}`,
    "status=foo",
    "status=completed&status=created",
    "vin=abc",
    `reference=${"r".repeat(300)}`,
    "foo=bar",
    "limit[]=1",
    "cursor[a]=b",
    "%zz=1",
    "limit=%00",
  ];
  const ids = [
    "x",
    "insp_",
    `insp_${"a".repeat(24)}`,
    `INSP_${"A".repeat(24)}`,
    "%00",
    "..%2f..%2fetc",
    "%zz",
    `insp_${"a".repeat(300)}`,
    "insp_%F0%9F%98%80",
    `${inspectionId}%20`,
  ];
  const tokens = [token, "x", "%00", "%zz", "t".repeat(300)];
  const list: Probe[] = [];
  for (const body of bodies)
    for (const type of types)
      list.push({ method: "POST", path: "/v1/inspections", headers: type ? { ...auth, "content-type": type } : auth, body });
  for (const a of [
    "",
    "Bearer",
    "Bearer ",
    `Bearer  ${key}`,
    `Basic ${Buffer.from(`${key}:`).toString("base64")}`,
    "Bearer sk_live_x",
    `Bearer ${key}x`,
    `Bearer sk_test_${"a".repeat(5000)}`,
  ])
    list.push({ method: "GET", path: "/v1/inspections", headers: a ? { authorization: a } : {} });
  for (const q of queries)
    for (const base of ["/v1/inspections", "/v1/events"]) list.push({ method: "GET", path: `${base}?${q}`, headers: auth });
  for (const id of ids) {
    for (const sub of ["", "/report", "/cancel"]) {
      list.push({ method: "GET", path: `/v1/inspections/${id}${sub}`, headers: auth });
      list.push({
        method: "POST",
        path: `/v1/inspections/${id}${sub}`,
        headers: { ...auth, "content-type": "application/json" },
        body: "{}",
      });
    }
    list.push(
      { method: "GET", path: `/v1/events/${id}`, headers: auth },
      { method: "GET", path: `/v1/media/${id}/full.jpg`, headers: { ...auth, "if-none-match": "*" } },
    );
  }
  for (const body of ["null", "[]", '{"x":1}', "{"])
    list.push({
      method: "POST",
      path: `/v1/inspections/${inspectionId}/cancel`,
      headers: { ...auth, "content-type": "application/json" },
      body,
    });
  for (const method of ["PUT", "DELETE", "PATCH", "OPTIONS"])
    for (const path of ["/v1/inspections", `/v1/inspections/${inspectionId}`, "/v1/openapi.json"])
      list.push({ method, path, headers: auth, body: "{}" });
  for (const path of ["/", "/v1", "/v2/inspections", "//v1/inspections", "/v1//inspections", "/%"])
    list.push({ method: "GET", path, headers: auth });
  const photos: [string, Buffer][] = [
    ["image/jpeg", Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 74, 70, 73, 70, 0])],
    ["image/jpeg", Buffer.alloc(0)],
    ["image/png", Buffer.from("not a png")],
    ["image/heic", Buffer.alloc(100, 7)],
    ["text/plain", Buffer.from("hi")],
    ["", Buffer.from("x")],
  ];
  for (const t of tokens) {
    list.push({ method: "GET", path: `/capture/v1/${t}` });
    for (const angle of ["front", "FRONT", "nope", "%00", "a".repeat(300)])
      for (const [type, body] of photos)
        list.push({ method: "PUT", path: `/capture/v1/${t}/photos/${angle}`, headers: type ? { "content-type": type } : {}, body });
    for (const body of ["", "{", "null", '{"vin":1}', `{"vin":"${"Z".repeat(10_000)}"}`, `{"vin":"${VALID_VIN}","x":1}`]) {
      for (const step of ["vin", "submit"])
        list.push({ method: "POST", path: `/capture/v1/${t}/${step}`, headers: { "content-type": "application/json" }, body });
    }
  }
  return list;
}

it("answers every malformed request without a 5xx, with a Request-Id, and with errors in the contract's shape", async () => {
  const all = probes();
  const found: string[] = [];
  for (const probe of all) found.push(...(await violations(probe)));
  expect(all.length).toBeGreaterThan(500);
  expect(found).toEqual([]);
});

/** Bytes sent as they are on a fresh connection; the whole answer, read until the server closes. */
function sendRaw(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(svc.url).port), "127.0.0.1", () => socket.write(bytes));
    let answer = "";
    socket.on("data", (d) => (answer += d));
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
  });
}

it("answers what Node's HTTP parser refuses in the contract's shape too, with a Request-Id, and closes the connection", async () => {
  for (const [bytes, status, code] of [
    [`GET /v1/inspections HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "request_headers_too_large"],
    ["NOT HTTP AT ALL\r\n\r\n", 400, "request_malformed"],
    ["POST /v1/inspections HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400, "request_malformed"],
    ["POST /v1/inspections HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "request_malformed"],
  ] as const) {
    const answer = await sendRaw(bytes);
    const [head, body] = answer.split("\r\n\r\n") as [string, string];
    expect(head.split("\r\n")[0], bytes.slice(0, 40)).toBe(
      `HTTP/1.1 ${status} ${status === 431 ? "Request Header Fields Too Large" : "Bad Request"}`,
    );
    const requestId = /^request-id: (req_[a-z0-9]{24})$/im.exec(head)?.[1];
    expect(requestId).toBeDefined();
    expect(JSON.parse(body)).toEqual({
      error: { type: "invalid_request_error", code, message: expect.stringMatching(/\S/), param: null, request_id: requestId },
    });
  }
});
