import { execFile } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { Ajv2020 } from "ajv/dist/2020.js";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { carPhotos } from "../helpers/photos.ts";
import { startService, type TestService, VALID_VIN } from "../helpers/service.ts";
import { walkaround } from "../helpers/walkaround.ts";
import { until } from "../helpers/webhook-receiver.ts";

/**
 * The OpenAPI document is exact (issue 35): every rule the service enforces on input is in it and
 * nothing it allows is refused; links lead from each response to the operations that take its
 * identifiers; a method it does not list answers 405 with Allow, whatever the method; a notify_url
 * whose name does not resolve now is not refused at creation. And a client generated from the
 * document walks an inspection from creation to its report, PDF and photos by its links alone.
 */
const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../..");

/** The document, as JSON read as it comes. */
type Json = Record<string, any>;

let svc: TestService;
let key: string;
let doc: Json;

beforeAll(async () => {
  svc = await startService();
  key = await svc.key("test");
  doc = await (await fetch(`${svc.url}/v1/openapi.json`)).json();
});
afterAll(() => svc.close());

const create = (json: unknown, k = key) => svc.api(k, "/v1/inspections", { method: "POST", json });

/** An operation of the document by its operationId, with its path and method. */
function operation(operationId: string): { path: string; method: string; op: Json } {
  for (const [path, operations] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(operations)) if (op.operationId === operationId) return { path, method, op };
  }
  throw new Error(`no operation ${operationId}`);
}

const queryParameter = (operationId: string, name: string) => operation(operationId).op.parameters.find((p: Json) => p.name === name);
const bodySchema = (operationId: string) => {
  const schema = operation(operationId).op.requestBody.content["application/json"].schema;
  return schema.$ref ? doc.components.schemas[schema.$ref.split("/").at(-1)] : schema;
};
/** A JSON Schema pattern as the document means it: ECMA-262, Unicode-aware. */
const matches = (pattern: string, value: string) => new RegExp(pattern, "u").test(value);

/** A completed inspection made through the capture API, without models. */
async function completed(): Promise<{ id: string; media: string }> {
  const made = await (await create({ vehicle: { vin: VALID_VIN } })).json();
  const capture = { id: made.id, token: made.capture_token, base: `${svc.url}/capture/v1/${made.capture_token}` };
  expect((await walkaround(svc, key, capture, { confirmVin: false })).status).toBe("completed");
  const report = await (await svc.api(key, `/v1/inspections/${made.id}/report`)).json();
  return { id: made.id, media: report.photos[0].media_id };
}

describe("every input rule is in the document, and nothing it allows is refused", () => {
  it("gives every string of a query or a JSON body a pattern without control characters, as the service refuses them", async () => {
    const strings: string[] = [];
    const seen = new Set<Json>();
    const visit = (schema: unknown, where: string): void => {
      if (schema === null || typeof schema !== "object" || seen.has(schema as Json)) return;
      const node = schema as Json;
      seen.add(node);
      if (node.$ref) visit(doc.components.schemas[node.$ref.split("/").at(-1)], where);
      if ([node.type].flat().includes("string") && node.enum === undefined && node.const === undefined) {
        expect(node.pattern, where).toBeDefined();
        expect(matches(node.pattern, "a\u0089b"), `${where}: ${node.pattern}`).toBe(false);
        strings.push(where);
      }
      for (const [name, sub] of Object.entries<unknown>(node.properties ?? {})) visit(sub, `${where}.${name}`);
      for (const sub of [node.items, node.additionalProperties, ...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.prefixItems ?? [])])
        visit(sub, where);
    };
    for (const [path, operations] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(operations)) {
        for (const p of op.parameters ?? []) if (p.in === "query") visit(p.schema, `${method} ${path} ?${p.name}`);
        visit(op.requestBody?.content?.["application/json"]?.schema, `${method} ${path} body`);
      }
    }
    expect(strings.length).toBeGreaterThan(10);

    for (const [json, param] of [
      [{ vehicle: { vin: "1HGCM82633A00\u00894352" } }, "vehicle.vin"],
      [{ vehicle: { vin: VALID_VIN }, reference: "claim\u009d1" }, "reference"],
    ] as const) {
      const res = await create(json);
      expect(res.status).toBe(400);
      expect((await res.json()).error).toMatchObject({ code: "parameter_invalid", param });
    }
  });

  it("states a VIN's form (format vin, a pattern): what the pattern refuses is refused, a VIN it takes is taken", async () => {
    const vin = bodySchema("createInspection").properties.vehicle.properties.vin;
    expect(vin.format).toBe("vin");
    expect(vin.description).toMatch(/check digit/);
    for (const [candidate, taken] of [
      [` ${VALID_VIN.toLowerCase()}  `, true],
      ["WVWZZZ1JZXW000001", true], // not North American: no check digit
      [VALID_VIN.slice(1), false],
      [`${VALID_VIN.slice(0, 16)}I`, false],
      // Characters only Unicode folds into the VIN alphabet or trims are not taken.
      [`\u00a0${VALID_VIN}`, false],
      ["SALGA2EF8EA123456", true],
      ["\u017fALGA2EF8EA123456", false],
      ["5YJ3E1EA2KF317000", true],
    ] as const) {
      expect(matches(vin.pattern, candidate), candidate).toBe(taken);
      const res = await create({ vehicle: { vin: candidate } });
      expect(res.status, candidate).toBe(taken ? 201 : 400);
    }
  });

  it("states capture.steps' rules (each angle once, an exterior angle required) as keywords: a JSON Schema 2020-12 validator and the service agree", async () => {
    // The creation body as the document states it, validated as OpenAPI 3.1 means (JSON Schema 2020-12).
    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    const valid = ajv.compile(bodySchema("createInspection"));
    const body = (steps: unknown) => ({ vehicle: { vin: VALID_VIN }, capture: { steps } });
    for (const [steps, param] of [
      [[{ angle: "front" }], null],
      [[{ angle: "vin" }, { angle: "rear_left", required: true }, { angle: "odometer", required: false }], null],
      [[{ angle: "front", required: false }, { angle: "right" }, { angle: "dashboard" }], null],
      // Every angle once, one exterior one required.
      [
        doc.paths["/capture/v1/{token}/photos/{angle}"].put.parameters
          .find((p: Json) => p.name === "angle")
          .schema.enum.map((angle: string) => ({ angle, required: angle === "left" })),
        null,
      ],
      // The one fuzzing found refused while the document allowed it: no exterior angle.
      [[{ angle: "vin" }], "capture.steps"],
      [[{ angle: "dashboard" }, { angle: "front", required: false }], "capture.steps"],
      [[{ angle: "wheel_front_left" }, { angle: "interior_front" }, { angle: "odometer" }], "capture.steps"],
      [[{ angle: "front" }, { angle: "front", required: false }], "capture.steps.1.angle"],
      [[{ angle: "front" }, { angle: "vin" }, { angle: "odometer" }, { angle: "vin", required: false }], "capture.steps.3.angle"],
      [[{ angle: "rear", required: false }, { angle: "rear", required: false }, { angle: "left" }], "capture.steps.1.angle"],
    ] as const) {
      const where = JSON.stringify(steps);
      expect(valid(body(steps)), `${where}: ${ajv.errorsText(valid.errors)}`).toBe(param === null);
      const res = await create(body(steps));
      expect(res.status, where).toBe(param === null ? 201 : 400);
      if (param !== null) expect((await res.json()).error, where).toMatchObject({ code: "parameter_invalid", param });
    }
    // What the document says of the rules: the keywords, not words alone.
    const steps = bodySchema("createInspection").properties.capture.properties.steps;
    expect(steps.contains.properties.angle.enum).toHaveLength(8);
    expect(steps.allOf).toHaveLength(steps.items.properties.angle.enum.length);
    expect(steps.allOf.every((rule: Json) => rule.minContains === 0 && rule.maxContains === 1)).toBe(true);
  });

  it("states integer ranges as patterns: the page size 1 to 100, as the service takes it", async () => {
    const limit = queryParameter("listInspections", "limit").schema;
    for (const value of ["0", "1", "007", "100", "0100", "101", "1000", "x1", ""]) {
      const res = await svc.api(key, `/v1/inspections?limit=${value}`);
      expect([value, res.status === 200]).toEqual([value, matches(limit.pattern, value)]);
    }
    const slot = operation("captureCloseup").op.parameters.find((p: Json) => p.name === "n").schema;
    expect(["0", "1", "8", "9"].map((n) => matches(slot.pattern, n))).toEqual([false, true, true, false]);
  });

  it("states a cursor's form, so an empty cursor is outside the document as it is refused; a next_cursor is taken", async () => {
    for (const [operationId, path] of [
      ["listInspections", "/v1/inspections"],
      ["listEvents", "/v1/events"],
    ] as const) {
      const cursor = queryParameter(operationId, "cursor").schema;
      expect(matches(cursor.pattern, "")).toBe(false);
      expect((await svc.api(key, `${path}?cursor=`)).status).toBe(400);
      await create({ vehicle: { vin: VALID_VIN } });
      await create({ vehicle: { vin: VALID_VIN } });
      const page = await (await svc.api(key, `${path}?limit=1`)).json();
      expect(matches(cursor.pattern, page.next_cursor)).toBe(true);
      expect((await svc.api(key, `${path}?limit=1&cursor=${page.next_cursor}`)).status).toBe(200);
    }
  });

  it("marks optional the bodies the service does without (rotate, cancel, resend), and required the one it needs", async () => {
    for (const operationId of ["rotateWebhookSecret", "cancelInspection", "resendEvent"]) {
      expect(operation(operationId).op.requestBody.required, operationId).toBe(false);
    }
    expect(operation("reviewInspection").op.requestBody.required).toBe(true);
    const rotated = await svc.api(key, "/v1/webhook_secret/rotate", { method: "POST" });
    expect(rotated.status).toBe(200);
    const made = await (await create({ vehicle: { vin: VALID_VIN } })).json();
    expect((await svc.api(key, `/v1/inspections/${made.id}/cancel`, { method: "POST" })).status).toBe(200);
    const reviewed = await svc.api(key, `/v1/inspections/${made.id}/review`, { method: "POST" });
    expect(reviewed.status).toBe(400);
  });

  it("takes every box the document allows, clipping one that runs past the photo, and states a decision's rule", async () => {
    const added = bodySchema("reviewInspection").properties.added.items;
    expect(added.properties.bbox.prefixItems).toHaveLength(4);
    const decision = bodySchema("reviewInspection").properties.decisions.items;
    expect(decision.oneOf).toHaveLength(2);

    const { id, media } = await completed();
    const review = (json: unknown) => svc.api(key, `/v1/inspections/${id}/review`, { method: "POST", json });
    const past = await review({ added: [{ media_id: media, type: "dent", severity: "minor", bbox: [0.9, 0.5, 0.2, 0.25] }] });
    expect(past.status).toBe(200);
    const [x, y, w, h] = (await past.json()).findings.at(-1).bbox;
    expect([x, y, h]).toEqual([0.9, 0.5, 0.25]);
    expect(w).toBeCloseTo(0.1, 12);
    const flat = await review({ added: [{ media_id: media, type: "dent", severity: "minor", bbox: [0.2, 0.5, 0, 0.25] }] });
    expect(flat.status).toBe(400);
  });
});

describe("notify_url: private by itself refused at creation, names resolved at each delivery", () => {
  let strict: TestService;
  let strictKey: string;
  beforeAll(async () => {
    strict = await startService({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: "false" });
    strictKey = await strict.key("test");
  });
  afterAll(() => strict.close());

  // .invalid never resolves (RFC 6761).
  const NOWHERE = "https://no-such-host.invalid/hooks";

  it("takes a notify_url whose name does not resolve now; each delivery records why it failed, and is retried", async () => {
    const res = await strict.api(strictKey, "/v1/inspections", {
      method: "POST",
      json: { vehicle: { vin: VALID_VIN }, notify_url: NOWHERE },
    });
    expect(res.status).toBe(201);
    const made = await res.json();
    const events = async () => (await (await strict.api(strictKey, "/v1/events?limit=100")).json()).data as Json[];
    const created = await until(
      "a delivery attempt",
      async () => (await events()).find((e) => e.data.id === made.id && e.delivery.attempts.length > 0),
      (e) => e !== undefined,
    );
    expect(created!.delivery.attempts[0]).toMatchObject({ number: 1, status_code: null, error: expect.stringMatching(/ENOTFOUND/) });
    expect(created!.delivery.status).toBe("pending");
    expect(created!.delivery.next_attempt_at).not.toBeNull();
  });

  it("takes a webhook test url whose name does not resolve: 200, not succeeded, with the error", async () => {
    const res = await strict.api(strictKey, "/v1/webhook_tests", { method: "POST", json: { url: NOWHERE } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ succeeded: false, status_code: null, error: expect.stringMatching(/ENOTFOUND/) });
  });

  it.each([
    "http://localhost:8080/hook",
    "http://hooks.localhost/",
    "http://0x7f.1/hook",
    "http://2130706433/",
    "http://[::ffff:10.0.0.1]/",
    "http://169.254.169.254/latest/meta-data",
  ])("still refuses %s, which the URL itself shows to be private", async (url) => {
    const res = await strict.api(strictKey, "/v1/inspections", { method: "POST", json: { vehicle: { vin: VALID_VIN }, notify_url: url } });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatchObject({ code: "parameter_invalid", param: "notify_url" });
  });
});

/** Sends a raw request and returns the answer's status, headers and error body. */
function raw(request: string): Promise<{ status: number; headers: Record<string, string>; error: Json }> {
  const { port } = new URL(svc.url);
  return new Promise((resolve, reject) => {
    let data = "";
    const socket = connect(Number(port), "127.0.0.1", () => socket.write(request));
    socket.on("data", (chunk) => (data += chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const [head, body] = data.split("\r\n\r\n");
      const lines = head!.split("\r\n");
      const headers = Object.fromEntries(
        lines.slice(1).map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      resolve({ status: Number(lines[0]!.split(" ")[1]), headers, error: JSON.parse(body!).error });
    });
  });
}

describe("a method the document does not list for a path", () => {
  /** Each path of the document with an id in place of each parameter, and its methods. */
  const paths = () =>
    Object.entries<Json>(doc.paths).map(([path, operations]) => ({
      path: path.replace(/\{[^}]+\}/g, "x1"),
      listed: Object.keys(operations).map((m) => m.toUpperCase()),
    }));
  const sorted = (allow: string | null | undefined) => (allow ?? "").split(/,\s*/).sort();

  it("answers 405 with Allow, in the contract's shape, for every method fetch can send (QUERY, with or without a body, included)", async () => {
    for (const { path, listed } of paths()) {
      for (const method of ["GET", "PUT", "POST", "DELETE", "OPTIONS", "PATCH", "QUERY", "SEARCH", "PURGE", "LINK"]) {
        if (listed.includes(method)) continue;
        // fetch sends no body with GET.
        const bodies = method === "GET" ? [{}] : [{}, { body: "{not json", headers: { "content-type": "application/json" } }];
        for (const init of bodies) {
          const res = await svc.api(key, path, { method, ...init });
          const where = `${method} ${path}`;
          expect(res.status, where).toBe(405);
          expect(sorted(res.headers.get("allow")), where).toEqual([...listed].sort());
          const body = await res.json();
          expect(body.error, where).toMatchObject({ type: "invalid_request_error", code: "method_not_allowed", param: null });
          expect(res.headers.get("request-id"), where).toBe(body.error.request_id);
        }
      }
    }
  });

  it("answers 405 with Allow for a method Node's parser does not know (FROBNICATE), and TRACE and CONNECT to a path", async () => {
    for (const method of ["FROBNICATE", "TRACE", "CONNECT"]) {
      const { status, headers, error } = await raw(`${method} /v1/inspections HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(status, method).toBe(405);
      expect(sorted(headers.allow), method).toEqual(["GET", "POST"]);
      expect(error, method).toMatchObject({ code: "method_not_allowed", type: "invalid_request_error" });
      expect(headers["request-id"], method).toBe(error.request_id);
    }
    const unknown = await raw("FROBNICATE /v1/vehicles HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    expect([unknown.status, unknown.error.code]).toEqual([404, "resource_missing"]);
    const query = await svc.api(key, "/v1/vehicles", { method: "QUERY" });
    expect(query.status).toBe(404);
  });
});

describe("a body the service refuses before reading it", () => {
  // The fuzz run found POST /v1/inspections/{id}/review answering 413 to a body of 500+ decisions
  // with emoji finding ids, a status its responses did not list: every operation that takes a JSON
  // body lists what the body's size and type are answered with.
  it("is answered with a status the operation lists: over 64 KiB, or not declared JSON", async () => {
    const big = JSON.stringify({ note: "x".repeat(70 * 1024) });
    const unlisted: string[] = [];
    const answered: Record<string, number> = {};
    for (const [path, operations] of Object.entries<Json>(doc.paths)) {
      for (const [method, op] of Object.entries<Json>(operations)) {
        if (!op.requestBody?.content?.["application/json"]) continue;
        const url = path.replace(/\{[^}]+\}/g, "x1");
        for (const [body, type] of [
          [big, "application/json"],
          ["{}", "text/plain"],
        ] as const) {
          const res = await svc.api(key, url, { method: method.toUpperCase(), body, headers: { "content-type": type } });
          const where = `${method.toUpperCase()} ${path} ${type}`;
          answered[where] = res.status;
          if (!(String(res.status) in op.responses)) unlisted.push(`${where}: ${res.status}`);
        }
      }
    }
    expect(unlisted).toEqual([]);
    // Refused for its size before the id is looked up: the test reaches the body limit.
    expect(answered["POST /v1/inspections/{id}/review application/json"]).toBe(413);
    expect(answered["POST /v1/inspections/{id}/cancel application/json"]).toBe(413);
  });
});

describe("links", () => {
  it("lead from each response to every operation that takes an identifier, giving each identifier it takes", () => {
    const targets = new Set<string>();
    for (const operations of Object.values<Json>(doc.paths)) {
      for (const op of Object.values<Json>(operations)) {
        for (const response of Object.values<Json>(op.responses)) {
          for (const [name, link] of Object.entries<Json>(response.links ?? {})) {
            const target = operation(link.operationId);
            const where = `${op.operationId} → ${name}`;
            const parameters: string[] = target.op.parameters.map((p: Json) => p.name);
            for (const name of Object.keys(link.parameters)) expect(parameters, where).toContain(name);
            // Every identifier in the target's path comes from the link; a photo's angle or a close-up's slot is the client's choice.
            const identifiers = target.op.parameters.filter((p: Json) => p.in === "path" && (p.name === "id" || p.name === "token"));
            for (const { name } of identifiers) expect(Object.keys(link.parameters), where).toContain(name);
            for (const expression of Object.values<string>(link.parameters)) {
              expect(expression, where).toMatch(/^\$response\.body#\/[\w/]+$|^\$request\.path\.token$/);
            }
            targets.add(link.operationId);
          }
        }
      }
    }
    const withIds = Object.values<Json>(doc.paths)
      .flatMap((operations) => Object.values<Json>(operations))
      .filter((op) => (op.parameters ?? []).some((p: Json) => p.in === "path"))
      .map((op) => op.operationId);
    expect(withIds.filter((id) => !targets.has(id))).toEqual([]);
    // The capture token is a field of its own: a link cannot take a URL's last segment.
    expect(operation("createInspection").op.responses["201"].links.CaptureSession.parameters).toEqual({
      token: "$response.body#/capture_token",
    });
  });

  it("let a client generated by openapi-typescript walk an inspection from creation through capture to its report, PDF and photo", async () => {
    const out = join(ROOT, ".tmp", `openapi-walk-${process.pid}`);
    mkdirSync(join(out, "photos"), { recursive: true });
    try {
      const types = await openapiTS(doc as never, {
        transform: (schema) => (schema.format === "binary" ? ts.factory.createTypeReferenceNode("Blob") : undefined),
      });
      writeFileSync(join(out, "api.d.ts"), astToString(types));
      writeFileSync(join(out, "walk.ts"), WALK);
      const photos = carPhotos(REQUIRED_ANGLES.length);
      for (const [i, angle] of REQUIRED_ANGLES.entries()) writeFileSync(join(out, "photos", `${angle}.jpg`), photos[i]!);
      // The walk type-checks against the generated client (a wrong path, parameter or body would not)...
      const tsc = await run(process.execPath, [
        join(ROOT, "node_modules/typescript/bin/tsc"),
        ...["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext"],
        ...["--allowImportingTsExtensions", "--skipLibCheck", "--types", "node", "--lib", "es2022,dom", join(out, "walk.ts")],
      ]).catch((e) => e);
      expect(`${tsc.stdout ?? ""}${tsc.stderr ?? ""}`).toBe("");
      // ...and runs.
      const walked = await run(process.execPath, [join(out, "walk.ts"), svc.url, key, join(out, "photos")], { timeout: 120_000 });
      const summary = JSON.parse(walked.stdout.trim().split("\n").at(-1)!);
      expect(summary).toMatchObject({
        created: 201,
        session: "in_progress",
        photos: REQUIRED_ANGLES.length,
        vin: true,
        submitted: "processing",
        status: "completed",
        report: "report",
        pdf: "%PDF",
        photo: "ffd8",
      });
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 180_000);
});

/**
 * The walk: identifiers only ever come from the document's links (`follow`), evaluated on the
 * response (and request) they belong to; the client's calls are typed by the generated `paths`.
 */
const WALK = `import { readFileSync } from "node:fs";
import { join } from "node:path";
import createClient from "openapi-fetch";
import type { paths } from "./api.d.ts";

const [baseUrl, key, photoDir] = process.argv.slice(2) as [string, string, string];
const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } });

type Link = { operationId: string; parameters: Record<string, string> };
type Operation = { operationId: string; responses: Record<string, { links?: Record<string, Link> }> };
const doc = (await (await fetch(\`\${baseUrl}/v1/openapi.json\`)).json()) as { paths: Record<string, Record<string, Operation>> };

/** An exchange a link is evaluated on: the operation, the status, the response body, the request's path parameters. */
type Exchange = { operationId: string; status: number; body: unknown; path?: Record<string, string> };

function pointer(value: unknown, at: string): string {
  const found = at.split("/").slice(1).reduce<unknown>((node, part) => (node as Record<string, unknown>)[part], value);
  if (typeof found !== "string") throw new Error(\`no string at \${at}\`);
  return found;
}

/** The parameters link \`name\` of an exchange's response gives its target, checked to be \`method path\`. */
function follow<P>(from: Exchange, name: string, method: string, path: string): P {
  const source = Object.values(doc.paths).flatMap((ops) => Object.values(ops)).find((op) => op.operationId === from.operationId);
  const link = source?.responses[String(from.status)]?.links?.[name];
  if (!link) throw new Error(\`\${from.operationId} \${from.status} has no link \${name}\`);
  const target = doc.paths[path]?.[method];
  if (target?.operationId !== link.operationId) throw new Error(\`\${name} leads to \${link.operationId}, not \${method} \${path}\`);
  const value = (expression: string) =>
    expression.startsWith("$response.body#") ? pointer(from.body, expression.slice("$response.body#".length)) : from.path![expression.slice("$request.path.".length)]!;
  return Object.fromEntries(Object.entries(link.parameters).map(([k, e]) => [k, value(e)])) as P;
}

const created = await client.POST("/v1/inspections", { body: { vehicle: { vin: "1HGCM82633A004352" }, reference: "walk" } });
if (!created.data) throw new Error(JSON.stringify(created.error));
const made: Exchange = { operationId: "createInspection", status: created.response.status, body: created.data };

const sessionPath = follow<{ token: string }>(made, "CaptureSession", "get", "/capture/v1/{token}");
const session = await client.GET("/capture/v1/{token}", { params: { path: sessionPath } });
if (!session.data) throw new Error(JSON.stringify(session.error));
const opened: Exchange = { operationId: "captureSession", status: 200, body: session.data, path: sessionPath };

let photos = 0;
let last: Exchange = opened;
for (const step of session.data.steps.filter((s) => s.required)) {
  const { token } = follow<{ token: string }>(opened, "CapturePhoto", "put", "/capture/v1/{token}/photos/{angle}");
  const photo = new Blob([readFileSync(join(photoDir, \`\${step.angle}.jpg\`))], { type: "image/jpeg" });
  const put = await client.PUT("/capture/v1/{token}/photos/{angle}", {
    params: { path: { token, angle: step.angle } },
    body: photo,
    bodySerializer: (body) => body,
    headers: { "content-type": "image/jpeg" },
  });
  if (!put.data) throw new Error(JSON.stringify(put.error));
  photos++;
  last = { operationId: "capturePhoto", status: 200, body: put.data, path: { token, angle: step.angle } };
}

const vin = await client.POST("/capture/v1/{token}/vin", {
  params: { path: follow<{ token: string }>(last, "CaptureVin", "post", "/capture/v1/{token}/vin") },
  body: { vin: session.data.vehicle.vin },
});
if (!vin.data) throw new Error(JSON.stringify(vin.error));
const submitted = await client.POST("/capture/v1/{token}/submit", {
  params: { path: follow<{ token: string }>(last, "CaptureSubmit", "post", "/capture/v1/{token}/submit") },
});
if (!submitted.data) throw new Error(JSON.stringify(submitted.error));

const inspectionPath = follow<{ id: string }>(made, "RetrieveInspection", "get", "/v1/inspections/{id}");
let inspection = (await client.GET("/v1/inspections/{id}", { params: { path: inspectionPath } })).data!;
for (let i = 0; i < 900 && inspection.status === "processing"; i++) {
  await new Promise((r) => setTimeout(r, 100));
  inspection = (await client.GET("/v1/inspections/{id}", { params: { path: inspectionPath } })).data!;
}
const retrieved: Exchange = { operationId: "retrieveInspection", status: 200, body: inspection };

const report = await client.GET("/v1/inspections/{id}/report", {
  params: { path: follow<{ id: string }>(retrieved, "RetrieveReport", "get", "/v1/inspections/{id}/report") },
});
if (!report.data) throw new Error(JSON.stringify(report.error));
const reported: Exchange = { operationId: "retrieveReport", status: 200, body: report.data };

const pdf = await client.GET("/v1/inspections/{id}/report.pdf", {
  params: { path: follow<{ id: string }>(reported, "RetrieveReportPdf", "get", "/v1/inspections/{id}/report.pdf") },
  parseAs: "arrayBuffer",
});
const photo = await client.GET("/v1/media/{id}/full.jpg", {
  params: { path: follow<{ id: string }>(reported, "RetrievePhoto", "get", "/v1/media/{id}/full.jpg"), header: {} },
  parseAs: "arrayBuffer",
});

console.log(
  JSON.stringify({
    created: created.response.status,
    session: session.data.status,
    photos,
    vin: vin.data.valid,
    submitted: submitted.data.status,
    status: inspection.status,
    report: report.data.object,
    pdf: Buffer.from(pdf.data as ArrayBuffer).subarray(0, 4).toString("latin1"),
    photo: Buffer.from(photo.data as ArrayBuffer).subarray(0, 2).toString("hex"),
  }),
);
`;
