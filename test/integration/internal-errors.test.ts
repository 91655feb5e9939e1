import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, type App } from "../../api/app.ts";
import { createKey } from "../../bin/commands/keys.ts";
import { embeddedServices, type EmbeddedServices } from "../../bin/embedded-services.ts";
import { loadConfig } from "../../core/runtime/config.ts";

/** A store that fails as a corrupted database would, to see what a client gets from a 500. */
describe("internal errors", () => {
  let app: App;
  let s: EmbeddedServices;
  let url: string;
  let key: string;
  const logged: string[] = [];

  beforeAll(async () => {
    const config = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), "vi-500-")), LOG_LEVEL: "info" });
    const log = pino(
      { level: "info" },
      new Writable({
        write: (chunk, _e, done) => {
          logged.push(String(chunk));
          done();
        },
      }),
    );
    s = embeddedServices(config, log);
    s.inspections.get = () => {
      throw new Error("SQLITE_CORRUPT: database disk image is malformed at /var/lib/secret/inspections.db");
    };
    key = await createKey(config, "test", "acme");
    app = await buildApp(s);
    url = await app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    await app.close();
    await s.close();
  });

  it("answers 500 api_error internal_error with a request id, and nothing internal", async () => {
    const res = await fetch(`${url}/v1/inspections/insp_000000000000000000000000`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(500);
    const text = await res.text();
    const body = JSON.parse(text);
    expect(body.error).toMatchObject({ type: "api_error", code: "internal_error", param: null });
    expect(body.error.request_id).toBe(res.headers.get("request-id"));
    expect(text).not.toMatch(/SQLITE|secret|\.ts|\bat\b.*:\d+/);
    // The operator's log has the cause, tied to the request id.
    const line = logged.find((l) => l.includes("SQLITE_CORRUPT"));
    expect(line).toBeDefined();
    expect(line).toContain(body.error.request_id);
  });
});
