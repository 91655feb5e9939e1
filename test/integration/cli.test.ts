import { execFile } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { startService } from "../helpers/service.ts";

const run = promisify(execFile);
const CLI = join(import.meta.dirname, "../../bin/vehicle-inspection.ts");
const cli = (dataDir: string, ...args: string[]) => run(process.execPath, [CLI, ...args], { env: { ...process.env, DATA_DIR: dataDir } });

describe("vehicle-inspection CLI", () => {
  it("creates, lists and revokes keys and prints webhook secrets, while the service runs", async () => {
    const svc = await startService();
    try {
      const { stdout: key } = await cli(svc.dataDir, "keys", "create", "--env", "live", "--account", "fleetco");
      expect(key).toMatch(/^sk_live_[a-z0-9]{40}\n$/);
      const live = key.trim();
      expect((await svc.api(live, "/v1/inspections")).status).toBe(200);

      const { stdout: list } = await cli(svc.dataDir, "keys", "list");
      const row = list.split("\n").find((l) => l.includes("fleetco"))!;
      expect(row).toContain(`sk_live_…${live.slice(-4)}`);
      expect(list).not.toContain(live);
      const keyId = row.split("\t")[0]!;
      expect(keyId).toMatch(/^key_/);

      const { stdout: secret } = await cli(svc.dataDir, "webhooks", "secret", "--env", "live", "--account", "fleetco");
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+\n$/);
      expect((await cli(svc.dataDir, "webhooks", "secret", "--env", "live", "--account", "fleetco")).stdout).toBe(secret);

      await cli(svc.dataDir, "keys", "revoke", keyId);
      expect((await svc.api(live, "/v1/inspections")).status).toBe(401);
    } finally {
      await svc.close();
    }
  });

  it("runs as the README shows it, `npx vehicle-inspection`, from the checkout as committed (executable)", async () => {
    expect(statSync(CLI).mode & 0o111, "bin/vehicle-inspection.ts must be committed executable").toBe(0o111);
    const dir = mkdtempSync(join(tmpdir(), "vi-cli-"));
    const npx = (...args: string[]) =>
      run("npx", ["--no-install", "vehicle-inspection", ...args], {
        cwd: join(import.meta.dirname, "../.."),
        env: { ...process.env, DATA_DIR: dir },
      });
    const { stdout: key } = await npx("keys", "create", "--env", "test");
    expect(key).toMatch(/^sk_test_[a-z0-9]{40}\n$/);
    expect((await npx("keys", "list")).stdout).toContain(`sk_test_…${key.trim().slice(-4)}`);
    expect((await npx("webhooks", "secret", "--env", "test")).stdout).toMatch(/^whsec_/);
  });

  it("refuses bad usage with exit code 2 and says why", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vi-cli-"));
    await expect(cli(dir, "keys", "create", "--env", "prod")).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--env must be test or live"),
    });
    await expect(cli(dir, "frobnicate")).rejects.toMatchObject({ code: 2 });
    await expect(cli(dir, "eval-product", "--fold", "5")).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--fold must be a whole number from 0 (held out) to 4"),
    });
    await expect(cli(dir, "keys", "revoke", "key_nope")).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("no such key") });
    await expect(
      run(process.execPath, [CLI, "keys", "list"], { env: { ...process.env, DATA_DIR: dir, PORT: "http" } }),
    ).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("PORT") });
  });
});
