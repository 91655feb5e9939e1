import { execFile, spawn } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { Webhook } from "standardwebhooks";
import { startService } from "../helpers/service.ts";
import { create } from "../helpers/walkaround.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

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
    const { stdout: key, stderr } = await npx("keys", "create", "--env", "test");
    expect(key).toMatch(/^sk_test_[a-z0-9]{40}\n$/);
    // No npm warning on every command (an unknown key in .npmrc made one; allowScripts says it now).
    expect(stderr).not.toContain("npm warn");
    expect((await npx("keys", "list")).stdout).toContain(`sk_test_…${key.trim().slice(-4)}`);
    expect((await npx("webhooks", "secret", "--env", "test")).stdout).toMatch(/^whsec_/);
  });

  it("webhooks listen forwards the test-mode events from now on to a local URL, signed with the account's secret", async () => {
    const svc = await startService({ WEBHOOKS_ALLOW_PRIVATE_TARGETS: "false" });
    const receiver = await new WebhookReceiver().start();
    const key = await svc.key("test");
    const before = await create(svc, key);
    const child = spawn(process.execPath, [CLI, "webhooks", "listen", "--api-key", key, "--forward-to", receiver.url, "--url", svc.url], {
      env: { ...process.env, DATA_DIR: svc.dataDir },
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    try {
      await until(
        "listening",
        () => out,
        (o) => o.includes("Forwarding"),
      );
      // The service would refuse this receiver as a notify_url (loopback): listen needs no such setting.
      const made = await create(svc, key);
      await fetch(made.base);
      await until(
        "two events forwarded",
        () => receiver.events(),
        (e) => e.length >= 2,
        10_000,
      );
      const events = receiver.events();
      expect(events.map((e) => [e.type, e.data.id])).toEqual([
        ["inspection.created", made.id],
        ["inspection.in_progress", made.id],
      ]);
      expect(events.some((e) => e.data.id === before.id)).toBe(false);
      const verifier = new Webhook(await svc.secret("test"));
      for (const r of receiver.received)
        expect(verifier.verify(r.body, r.headers as Record<string, string>)).toMatchObject({ object: "event" });
      expect(out).toMatch(/inspection\.created\s+evt_\w+ \(insp_\w+\)\s+-> 200 in \d+ ms/);
    } finally {
      child.kill("SIGINT");
      await receiver.close();
      await svc.close();
    }
    await expect(cli(svc.dataDir, "webhooks", "listen", "--api-key", "sk_live_x", "--forward-to", receiver.url)).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("test-mode events only"),
    });
  });

  it("demo runs one inspection end to end against the running service, in the account the dashboard user is in", async () => {
    const svc = await startService();
    try {
      const { stdout } = await cli(svc.dataDir, "demo", "--url", svc.url);
      const id = stdout.match(/^created (insp_\w+) for 1HGCM82633A004352 \(2003 Honda Accord\)$/m)?.[1];
      expect(id, stdout).toBeDefined();
      // A photo for each required step, each passing its checks: the sample photos fit their angles.
      expect(stdout.match(/^photo .* passed$/gm)).toHaveLength(9);
      expect(stdout).toContain("VIN confirmed: 1HGCM82633A004352 (matches the vehicle)");
      expect(stdout).toContain(`${id} is completed`);
      expect(stdout).toMatch(/^grade (none|minor|moderate|severe), \d+ finding/m);
      expect(stdout).toContain(`dashboard: ${svc.url}/dashboard/test/inspections/${id}`);
      // Made with a key of the default account: what `keys create` and `users create` use without --account.
      const listed = await (await svc.api(await svc.key("test", "default"), "/v1/inspections?reference=demo")).json();
      expect(listed.data.map((i: { id: string }) => i.id)).toEqual([id]);
    } finally {
      await svc.close();
    }
    await expect(cli(mkdtempSync(join(tmpdir(), "vi-cli-")), "demo", "--datasets", "/nowhere")).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("pass --datasets DIR"),
    });
  });

  it("demo walks round with drawn photos and a given key, as the chart's helm test runs it, and fails when it cannot", async () => {
    const svc = await startService();
    try {
      const key = await svc.key("test", "helm-test");
      // A process with no way to the key store: a DATA_DIR of its own, as the test pod's /tmp.
      const elsewhere = mkdtempSync(join(tmpdir(), "vi-cli-"));
      const { stdout } = await cli(elsewhere, "demo", "--drawn-photos", "--url", svc.url, "--api-key", key);
      const id = stdout.match(/^created (insp_\w+) for /m)?.[1];
      expect(id, stdout).toBeDefined();
      expect(stdout.match(/^photo /gm)).toHaveLength(9);
      expect(stdout).toContain(`${id} is completed`);
      expect(stdout).toMatch(/^grade (none|minor|moderate|severe), \d+ finding/m);
      const report = await svc.api(key, `/v1/inspections/${id}/report`);
      expect(report.status).toBe(200);
      // A second run's photos are its own, not ones sent before.
      const again = await cli(elsewhere, "demo", "--drawn-photos", "--url", svc.url, "--api-key", key);
      expect(again.stdout).toMatch(/is completed$/m);
      // A key the service does not know: exit 1, naming the step that failed.
      await expect(
        cli(elsewhere, "demo", "--drawn-photos", "--url", svc.url, "--api-key", `sk_test_${"0".repeat(40)}`),
      ).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringContaining("POST /v1/inspections: 401"),
      });
    } finally {
      await svc.close();
    }
    const dir = mkdtempSync(join(tmpdir(), "vi-cli-"));
    await expect(cli(dir, "demo", "--drawn-photos", "--api-key", "sk_live_x")).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining("test-mode key"),
    });
    await expect(cli(dir, "demo", "--drawn-photos", "--url", "http://127.0.0.1:9", "--api-key", "sk_test_x")).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining("could not reach the service"),
    });
  });

  it("start ends with exit code 1 when it cannot serve (its port taken), instead of staying up alive and never ready", async () => {
    const dir = mkdtempSync(join(tmpdir(), "vi-cli-"));
    const taken = createServer();
    await new Promise<void>((listening) => taken.listen(0, "127.0.0.1", listening));
    const port = String((taken.address() as AddressInfo).port);
    try {
      const env = {
        ...process.env,
        DATA_DIR: dir,
        HOST: "127.0.0.1",
        PORT: port,
        METRICS_PORT: "0",
        PUBLIC_URL: `http://127.0.0.1:${port}`,
      };
      await expect(run(process.execPath, [CLI, "start"], { env, timeout: 30_000 })).rejects.toMatchObject({
        code: 1,
        stderr: expect.stringContaining("EADDRINUSE"),
      });
    } finally {
      taken.close();
    }
  }, 40_000);

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
