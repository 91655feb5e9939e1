import { execFile } from "node:child_process";
import { request } from "node:http";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LINGER_MS } from "../../api/plugins/staged-close.ts";
import { startService, VALID_VIN, type TestService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

/**
 * A large body refused from its first bytes (issue 33, item 9): the client is still sending when
 * the answer goes out, and must still be able to read it, then see the connection close cleanly
 * rather than be reset under it.
 */
let svc: TestService;
let key: string;

beforeAll(async () => {
  svc = await startService();
  key = await svc.key("test");
});
afterAll(() => svc.close());

const MB = 1024 * 1024;
const SVG = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg">${" ".repeat(8_000)}`);
const JPEG_HEAD = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from("JFIF\0"), Buffer.alloc(8_000)]);

type Outcome = {
  status?: number;
  headers?: Record<string, unknown>;
  body?: string;
  sent: number;
  errorsBeforeAnswer: string[];
  closedAfterMs?: number;
};

/** Streams `total` bytes in 64 KiB chunks (Transfer-Encoding: chunked) with Node's HTTP client, reading the answer as it comes. */
function streamUpload(url: string, headers: Record<string, string>, first: Buffer, total: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const outcome: Outcome = { sent: 0, errorsBeforeAnswer: [] };
    let answeredAt = 0;
    const req = request(url, { method: url.includes("/capture/") ? "PUT" : "POST", headers });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (outcome.sent < total) {
        const c = outcome.sent === 0 ? first : chunk;
        outcome.sent += c.length;
        if (!req.write(c)) return void req.once("drain", pump);
      }
      req.end();
    };
    req.on("response", (res) => {
      outcome.status = res.statusCode;
      outcome.headers = res.headers;
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => {
        outcome.body = body;
        answeredAt = performance.now();
      });
    });
    req.on("error", (e: NodeJS.ErrnoException) => {
      if (outcome.body === undefined) outcome.errorsBeforeAnswer.push(e.code ?? e.message);
    });
    req.on("close", () => {
      if (answeredAt) outcome.closedAfterMs = performance.now() - answeredAt;
      resolve(outcome);
    });
    pump();
  });
}

function expectAnswered(outcome: Outcome, status: number, code: string) {
  expect(outcome.errorsBeforeAnswer, JSON.stringify(outcome)).toEqual([]);
  expect(outcome.status).toBe(status);
  expect(JSON.parse(outcome.body!).error.code).toBe(code);
  expect(outcome.headers!.connection).toBe("close");
  expect(outcome.headers!["request-id"]).toMatch(/^req_/);
  // Refused early: the client had not sent it all.
  expect(outcome.sent).toBeLessThan(60 * MB);
  // Closed once the answer was read, within the linger at most.
  expect(outcome.closedAfterMs).toBeLessThan(LINGER_MS + 1_000);
}

describe("a 60 MB chunked upload refused from its first bytes", () => {
  const capturePhoto = async () => `${(await create(svc, key)).base}/photos/front`;

  it("an SVG sent as image/jpeg: 415, read by the client, then a clean close", async () => {
    expectAnswered(await streamUpload(await capturePhoto(), { "content-type": "image/jpeg" }, SVG, 60 * MB), 415, "unsupported_media_type");
  });

  it("a JPEG over the 15 MiB limit: 413, read by the client, then a clean close", async () => {
    expectAnswered(await streamUpload(await capturePhoto(), { "content-type": "image/jpeg" }, JPEG_HEAD, 60 * MB), 413, "body_too_large");
  });

  it("a Content-Type the route does not take: 415, read by the client, then a clean close", async () => {
    const outcome = await streamUpload(await capturePhoto(), { "content-type": "application/octet-stream" }, SVG, 60 * MB);
    expectAnswered(outcome, 415, "unsupported_media_type");
  });

  it("a JSON body over 64 KiB on /v1: 413, read by the client, then a clean close", async () => {
    const outcome = await streamUpload(
      `${svc.url}/v1/inspections`,
      { "content-type": "application/json", authorization: `Bearer ${key}` },
      Buffer.from(`{"vehicle":{"vin":"${VALID_VIN}"},"reference":"`),
      60 * MB,
    );
    expectAnswered(outcome, 413, "body_too_large");
  });

  it("curl streaming zeros from a pipe as image/jpeg gets the 415 and its body", async () => {
    const url = await capturePhoto();
    const { stdout } = await promisify(execFile)(
      "bash",
      ["-c", `head -c ${60 * MB} /dev/zero | curl -sS -T - -H 'Content-Type: image/jpeg' -w '\\n%{http_code}' '${url}'`],
      { maxBuffer: MB },
    );
    const [body, status] = stdout.trim().split("\n");
    expect(status).toBe("415");
    expect(JSON.parse(body!).error.code).toBe("unsupported_media_type");
  });

  it("the service answers the next request as usual", async () => {
    expect((await svc.api(key, "/v1/inspections?limit=1")).status).toBe(200);
  });
});
