import { connect } from "node:net";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { heavyPng, hostilePhotos } from "../helpers/hostile-photos.ts";
import { carPhoto, heicOf } from "../helpers/photos.ts";
import { startService, type TestService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";

/**
 * A photo is what it claims to be: its bytes are one of the accepted formats (JPEG, PNG, WebP, HEIC)
 * and the one its Content-Type names, checked before anything decodes them. SVG, GIF, TIFF and PDF
 * under an image label are refused at once, however long they would take to render.
 */
let svc: TestService;
let token: string;
const photo = carPhoto(0);
let hostile: Record<string, Buffer>;

/** Refusals come from the bytes' first few bytes, so even on a loaded two-core machine they are quick. */
const FAST_MS = 1_000;

beforeAll(async () => {
  // Many uploads to one link, most refused in a millisecond: past the default 20/s capture limit.
  svc = await startService({ RATE_LIMIT_CAPTURE_PER_SECOND: "10000" });
  const key = await svc.key("test");
  ({ token } = await create(svc, key));
  hostile = await hostilePhotos(photo);
});
afterAll(() => svc.close());

const upload = (bytes: Buffer, type: string, angle = "front") =>
  fetch(`${svc.url}/capture/v1/${token}/photos/${angle}`, { method: "PUT", body: bytes, headers: { "content-type": type } });

async function expectUnsupported(res: Response) {
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(415);
  expect(res.headers.get("request-id")).toMatch(/^req_/);
  expect(body.error).toMatchObject({
    type: "invalid_request_error",
    code: "unsupported_media_type",
    request_id: res.headers.get("request-id"),
  });
  expect(body.error).toHaveProperty("param");
  return body.error.message as string;
}

describe("bytes that are not an accepted format", () => {
  const kinds = ["svg", "billion-laughs svg", "large svg", "gif", "tiff", "pdf"];
  const cases = kinds.flatMap((kind) => ["image/jpeg", "image/png"].map((type) => [kind, type] as const));

  it.each(cases)("%s sent as %s is 415, answered before any decoding", async (kind, type) => {
    const t0 = performance.now();
    const res = await upload(hostile[kind]!, type);
    const message = await expectUnsupported(res);
    expect(performance.now() - t0).toBeLessThan(FAST_MS);
    expect(message).toMatch(/JPEG, PNG, WebP or HEIC/);
  });

  it("an SVG with leading whitespace and a byte-order mark is refused too", async () => {
    const res = await upload(Buffer.concat([Buffer.from("\ufeff  \n"), hostile.svg!]), "image/png");
    await expectUnsupported(res);
  });
});

describe("refused as the body arrives", () => {
  it("answers 415 from the first kilobytes of a 14 MiB SVG, without waiting for the rest", async () => {
    const { port } = new URL(svc.url);
    const head = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg">${" ".repeat(8_000)}`);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write(
          `PUT /capture/v1/${token}/photos/front HTTP/1.1\r\nHost: x\r\nContent-Type: image/jpeg\r\nContent-Length: ${14 * 1024 * 1024}\r\n\r\n`,
        );
        socket.write(head); // and nothing more: the rest of the body never comes
      });
      let data = "";
      const finish = () => {
        socket.destroy();
        resolve(data);
      };
      socket.on("data", (chunk) => {
        data += chunk;
        if (data.includes("\r\n\r\n{")) finish();
      });
      socket.on("error", reject);
      setTimeout(finish, 5_000);
    });
    expect(answer).toMatch(/^HTTP\/1.1 415 /);
    expect(answer).toContain('"code":"unsupported_media_type"');
  });
});

describe("bytes of one accepted format labelled as another", () => {
  it("PNG bytes sent as image/jpeg are 415, naming what was found and what was declared", async () => {
    const png = await sharp(photo).png().toBuffer();
    const message = await expectUnsupported(await upload(png, "image/jpeg"));
    expect(message).toMatch(/PNG/);
    expect(message).toMatch(/image\/jpeg/);
  });

  it("JPEG bytes sent as image/webp are 415", async () => {
    const message = await expectUnsupported(await upload(photo, "image/webp"));
    expect(message).toMatch(/JPEG/);
    expect(message).toMatch(/image\/webp/);
  });

  it("HEIC bytes sent as image/jpeg are 415", async () => {
    await expectUnsupported(await upload(await heicOf(await sharp(photo).resize(320).toBuffer()), "image/jpeg"));
  });
});

describe("accepted formats, labelled as what they are", () => {
  it.each([
    ["JPEG", "image/jpeg", () => sharp(photo).jpeg().toBuffer()],
    ["PNG", "image/png", () => sharp(photo).png().toBuffer()],
    ["WebP", "image/webp", () => sharp(photo).webp().toBuffer()],
    ["HEIC", "image/heic", () => heicOf(photo)],
  ] as const)("%s is 200 and stored as a JPEG of the same size", async (_name, type, make) => {
    const res = await upload(await make(), type, "left");
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    const { width, height } = await sharp(photo).metadata();
    expect(body).toMatchObject({ angle: "left", width, height });
  });

  it("a declared type with parameters or in upper case is read as its media type", async () => {
    expect((await upload(photo, "Image/JPEG; charset=binary", "right")).status).toBe(200);
  });

  it("heavy photos just under the pixel limit are taken, several at once; one over it is 413", async () => {
    const heavy = await heavyPng(photo);
    const answers = await Promise.all(["rear", "rear_left", "rear_right"].map((angle) => upload(heavy, "image/png", angle)));
    for (const res of answers) expect(res.status).toBe(200);
    expect((await answers[0]!.json()).width).toBe(4096);
    const bomb = await sharp({ create: { width: 8000, height: 6000, channels: 3, background: "#808080" } })
      .png()
      .toBuffer();
    const tooBig = await upload(bomb, "image/png");
    expect(tooBig.status).toBe(413);
    expect((await tooBig.json()).error).toMatchObject({ code: "body_too_large", message: expect.stringMatching(/megapixels/) });
  });
});
