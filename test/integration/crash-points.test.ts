import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, type App } from "../../api/app.ts";
import { createKey } from "../../bin/commands/keys.ts";
import { embeddedServices, type EmbeddedServices } from "../../bin/embedded-services.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { carPhotos } from "../helpers/photos.ts";
import { VALID_VIN } from "../helpers/service.ts";

/**
 * Issue 30: a write that spans the blob store and the store of record, crashed at each point between
 * its steps and replayed as the client replays it. The photo upload writes its blobs, then the row
 * that points at them (then deletes a replaced photo's blobs): a crash before the row leaves files
 * nothing points at, never a row pointing at nothing, and the retry stores the photo; a crash after
 * the row, as a replaced photo's blobs are deleted, leaves that photo's file and nothing pointing at
 * what is gone. (Report and
 * move: test/unit/controller.test.ts; evidence and findings: the same file and the store contract.)
 */
describe("crash points of a photo upload", () => {
  let app: App;
  let s: EmbeddedServices;
  let url: string;
  let key: string;
  let dataDir: string;
  /** The store's next putPhoto fails after the blobs are written, as a process killed there would leave it. */
  let crashNext = false;
  const [first, second] = carPhotos(2);

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "vi-crash-points-"));
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: "silent", DAMAGE_MODEL: "none", PARTS_MODEL: "none", JUDGE_MODEL: "none" });
    s = embeddedServices(config, pino({ level: "silent" }));
    const putPhoto = s.inspections.putPhoto.bind(s.inspections);
    s.inspections.putPhoto = async (...args) => {
      if (crashNext) {
        crashNext = false;
        throw new Error("killed between the blobs and the row");
      }
      return putPhoto(...args);
    };
    key = await createKey(config, "test", "acme");
    app = await buildApp(s);
    url = await app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    await app.close();
    await s.close();
  });

  /** A new inspection, its capture API's base, and an upload of a photo of `angle` through it. */
  const inspectionTaking = async (angle: string) => {
    const made = await (
      await fetch(`${url}/v1/inspections`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ vehicle: { vin: VALID_VIN } }),
      })
    ).json();
    // PUBLIC_URL is the default here: the capture routes are this app's.
    const base = `${url}/capture/v1/${made.capture_url.split("/c/")[1]}`;
    const put = (bytes: Buffer) =>
      fetch(`${base}/photos/${angle}`, { method: "PUT", body: bytes, headers: { "content-type": "image/jpeg" } });
    return { made, base, put };
  };

  it("a crash between the blobs and the row: the retry stores the photo, and no row points at a missing blob", async () => {
    const { made, base, put } = await inspectionTaking("front");

    crashNext = true;
    expect((await put(first!)).status).toBe(500);
    const photosDir = join(dataDir, "blobs", "photos", made.id);
    const orphans = readdirSync(photosDir);
    expect(orphans).toHaveLength(1);
    expect((await s.inspections.photos(made.id)).length).toBe(0);

    const retried = await put(first!);
    expect(retried.status).toBe(200);
    const stored = await retried.json();
    const rows = await s.inspections.photos(made.id);
    expect(rows.map((p) => p.mediaId)).toEqual([stored.media_id]);
    expect(existsSync(join(photosDir, `${stored.media_id}.jpg`))).toBe(true);

    // A retake crashed before its row: the earlier photo stays, whole.
    crashNext = true;
    expect((await put(second!)).status).toBe(500);
    expect((await s.inspections.photos(made.id)).map((p) => p.mediaId)).toEqual([stored.media_id]);
    expect(existsSync(join(photosDir, `${stored.media_id}.jpg`))).toBe(true);
    const session = await (await fetch(base)).json();
    expect(session.steps.find((st: { angle: string }) => st.angle === "front")).toMatchObject({ done: true });
  });

  it("a crash after a retake's row, before the replaced photo's blobs are deleted: the retake stands, only files are left", async () => {
    const { made, put } = await inspectionTaking("rear");
    const firstTake = await (await put(first!)).json();

    // The retake's row is stored; the process dies as it deletes the photo it replaced.
    const del = s.blobs.delete.bind(s.blobs);
    s.blobs.delete = async (blobKey: string) => {
      s.blobs.delete = del;
      throw new Error(`killed while deleting ${blobKey}`);
    };
    expect((await put(second!)).status).toBe(500);
    const rows = await s.inspections.photos(made.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.mediaId).not.toBe(firstTake.media_id);
    // The row points at a blob that is there; the replaced photo's file is left, pointed at by nothing.
    const photosDir = join(dataDir, "blobs", "photos", made.id);
    expect(existsSync(join(photosDir, `${rows[0]!.mediaId}.jpg`))).toBe(true);
    expect(readdirSync(photosDir).sort()).toEqual([`${firstTake.media_id}.jpg`, `${rows[0]!.mediaId}.jpg`].sort());
    expect((await fetch(`${url}/v1/media/${rows[0]!.mediaId}/full.jpg`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);

    // The client, answered 500, sends the retake again: it replaces the one stored, and its blobs go.
    const again = await put(second!);
    expect(again.status).toBe(200);
    const last = await again.json();
    expect((await s.inspections.photos(made.id)).map((p) => p.mediaId)).toEqual([last.media_id]);
    expect(readdirSync(photosDir).sort()).toEqual([`${firstTake.media_id}.jpg`, `${last.media_id}.jpg`].sort());
  });
});
