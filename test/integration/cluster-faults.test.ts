import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../bin/commands/keys.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { startNatsServer, startVersityGw, type NatsServer, type VersityGw } from "../helpers/go-servers.ts";
import { type ControlPlane, startControlPlane } from "../helpers/kube-control-plane.ts";
import { carPhotos } from "../helpers/photos.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

const ANGLES: readonly string[] = REQUIRED_ANGLES;
const photos = carPhotos(ANGLES.length);
const WALKAROUNDS = 6;
/** A create with a fresh key this often, from the start until NATS is back. */
const CREATE_EVERY_MS = 100;

/**
 * Issue 30, black box: the cluster mode on one machine (two `api`s, two `operator`s, two `inference`
 * workers over a real nats-server and versitygw), each workload under a supervisor that starts again
 * whatever exits, while an inference worker, the leading operator, an api and nats-server are
 * SIGKILLed (NATS stopped) one after the other, walkarounds go on and a burst of creates runs, each
 * failed create retried with its Idempotency-Key as a client would. Afterwards: one inspection per
 * key, every walkaround completed, each of its events delivered, none twice.
 */
const NAMESPACE = "faults";

/** The store of record: the SQLite file the processes of one machine share, or the Inspection resources of a real kube-apiserver. */
describe.each(["sqlite", "kubernetes"] as const)(
  "cluster mode under faults, inspections in %s: workloads and NATS killed while customers and clients carry on",
  (store) => {
    let k: ControlPlane | undefined;
    let nats: NatsServer;
    let s3: VersityGw;
    let receiver: WebhookReceiver;
    let dataDir: string;
    let env: Record<string, string>;
    const urls: string[] = [];
    let stopping = false;
    /** The running process of each supervised workload, by a name of its own. */
    const running = new Map<string, ServiceProcess>();
    const restarts = new Map<string, number>();
    /** Every process started, by name, the exited ones too (their logs say when they led). */
    const launched: [string, ServiceProcess][] = [];

    /** Starts `workload` and starts it again whenever it exits, until the test ends. */
    async function supervise(name: string, workload: string, extra: Record<string, string> = {}): Promise<void> {
      // Over the resources each process has a data directory of its own, as pods do; one machine's share it.
      const own = store === "kubernetes" ? { DATA_DIR: mkdtempSync(join(dataDir, `${name}-`)) } : {};
      const launch = () => {
        const p = new ServiceProcess({ ...env, ...own, ...extra }, workload);
        running.set(name, p);
        launched.push([name, p]);
        void p.exited.then(() => {
          if (stopping) return;
          restarts.set(name, (restarts.get(name) ?? 0) + 1);
          setTimeout(launch, 500);
        });
        return p;
      };
      // A standby operator waits for the lease before it says it started.
      await launch().line((l) => l.msg === `${workload} workload started` || l.msg === "waiting to lead", 60_000);
    }

    beforeAll(async () => {
      [nats, s3, receiver] = await Promise.all([startNatsServer(), startVersityGw(), new WebhookReceiver().start()]);
      dataDir = mkdtempSync(join(tmpdir(), "vi-faults-"));
      let kubernetes: Record<string, string> = {};
      if (store === "kubernetes") {
        k = await startControlPlane();
        await k.installCrds();
        await k.kubectl("create", "namespace", NAMESPACE);
        kubernetes = { INSPECTION_STORE: "kubernetes", POD_NAMESPACE: NAMESPACE, KUBECONFIG: k.kubeconfig };
      }
      const ports = [await freePort(), await freePort()];
      urls.push(...ports.map((p) => `http://127.0.0.1:${p}`));
      env = {
        DATA_DIR: dataDir,
        HOST: "127.0.0.1",
        PUBLIC_URL: urls[0]!,
        NATS_URL: nats.url,
        METRICS_PORT: "0",
        ...s3.clientEnv,
        WEBHOOKS_ALLOW_PRIVATE_TARGETS: "true",
        CONTROLLER_POLL_MS: "100",
        OPERATOR_LEASE_MS: "6000",
        WEBHOOK_RETRY_SCHEDULE_MS: "1000,2000,4000,8000",
        WEBHOOK_TIMEOUT_MS: "2000",
        RATE_LIMIT_TEST_PER_SECOND: "10000",
        LOG_LEVEL: "info",
        DAMAGE_MODEL: "none",
        PARTS_MODEL: "none",
        JUDGE_MODEL: "none",
        ...kubernetes,
      };
      await Promise.all([
        supervise("api-0", "api", { PORT: String(ports[0]) }),
        supervise("api-1", "api", { PORT: String(ports[1]) }),
        supervise("operator-0", "operator"),
        supervise("operator-1", "operator"),
        supervise("inference-0", "inference"),
        supervise("inference-1", "inference"),
      ]);
    }, 180_000);

    afterAll(async () => {
      stopping = true;
      for (const p of running.values()) p.kill();
      await Promise.all([...running.values()].map((p) => p.exited));
      await Promise.all([nats?.close(), s3?.close(), receiver?.close(), k?.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    });

    it("keeps one inspection per key, completes every walkaround and delivers each event once", async () => {
      const key = await createKey(loadConfig(env), "test", "faults-co");
      let turn = 0;
      /** A request to one api and then the other, as a load balancer spreads them; null when neither answered. */
      const call = async (path: string, init: RequestInit = {}): Promise<Response | null> => {
        const base = urls[turn++ % urls.length]!;
        try {
          return await fetch(base + path, {
            ...init,
            headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers },
            signal: AbortSignal.timeout(15_000),
          });
        } catch {
          return null;
        }
      };
      /** What a client does: the same request with its key until it is answered 2xx or 4xx (409 in flight too is retried). */
      const retried = async (path: string, init: RequestInit, ok: (r: Response) => boolean): Promise<Response> => {
        for (let tries = 0; ; tries++) {
          const r = await call(path, init);
          if (r && (ok(r) || (r.status >= 400 && r.status < 500 && r.status !== 409 && r.status !== 429))) return r;
          // A key whose request died with its api before it took effect is in flight until it goes
          // stale (STALE_IN_FLIGHT_MS, 75 s): the client keeps retrying past that.
          if (tries > 400) throw new Error(`${path} never answered: last ${r?.status}`);
          await new Promise((res) => setTimeout(res, 300));
        }
      };
      const createWith = async (reference: string) => {
        const body = JSON.stringify({ reference, vehicle: { vin: VALID_VIN }, notify_url: receiver.url });
        const r = await retried(
          "/v1/inspections",
          { method: "POST", body, headers: { "idempotency-key": `key-${reference}` } },
          (x) => x.status === 201,
        );
        expect(r.status, reference).toBe(201);
        return (await r.json()) as { id: string; capture_url: string };
      };
      const capture = async (token: string, path: string, init: RequestInit, ok: (r: Response) => boolean, noAnswer = () => {}) => {
        for (let tries = 0; ; tries++) {
          const base = urls[turn++ % urls.length]!;
          const r = await fetch(`${base}/capture/v1/${token}${path}`, { ...init, signal: AbortSignal.timeout(15_000) }).catch(() => {
            noAnswer();
            return null;
          });
          if (r && ok(r)) return r;
          if (tries > 200) throw new Error(`capture ${path} never answered: last ${r?.status}`);
          await new Promise((res) => setTimeout(res, 300));
        }
      };
      const submittedAt = new Map<string, number>();
      /** Every submit sent, each try: when, and what it was answered (null: no answer). */
      const submits: { at: number; status: number | null }[] = [];
      const photographed = async (reference: string) => {
        const made = await createWith(reference);
        const token = made.capture_url.split("/c/")[1]!;
        for (const [i, angle] of ANGLES.entries()) {
          await capture(
            token,
            `/photos/${angle}`,
            { method: "PUT", body: photos[i], headers: { "content-type": "image/jpeg" } },
            (r) => r.status === 200,
          );
        }
        return { id: made.id, token };
      };
      const walkaround = async (n: number) => {
        const { id, token } = await photographed(`walk-${n}`);
        const sentAt = Date.now();
        let unanswered = false;
        await capture(
          token,
          "/submit",
          { method: "POST" },
          (r) => {
            submits.push({ at: Date.now(), status: r.status });
            // 410 (the link spent) to a retry whose earlier try got no answer or a 5xx: that try went through.
            const done = r.status === 202 || (r.status === 410 && unanswered);
            unanswered ||= r.status >= 500;
            return done;
          },
          () => (unanswered = true),
        );
        submittedAt.set(id, sentAt);
        return id;
      };
      // Photographed before the faults, submitted once the moment the leader is killed (no operator leads).
      const failover = await photographed("failover");
      let failoverSubmit: { at: number; status: number | null; answeredMs: number } | undefined;

      let natsBackAt = 0;
      let natsStoppedAt = 0;
      let leaderKilledAt = 0;
      const faults = (async () => {
        const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
        await pause(1_500);
        running.get("inference-0")!.kill();
        await pause(2_000);
        const leader = [...running.entries()].find(([name, p]) => name.startsWith("operator") && p.logs.some((l) => l.msg === "leading"));
        leader?.[1].kill();
        leaderKilledAt = Date.now();
        // One try, to an api that is up: answered 202 with no controller leading (the intent is recorded).
        const at = Date.now();
        const r = await fetch(`${urls[0]}/capture/v1/${failover.token}/submit`, {
          method: "POST",
          signal: AbortSignal.timeout(15_000),
        }).catch(() => null);
        failoverSubmit = { at, status: r?.status ?? null, answeredMs: Date.now() - at };
        submittedAt.set(failover.id, at);
        await pause(2_000);
        running.get("api-1")!.kill();
        await pause(2_000);
        natsStoppedAt = Date.now();
        await nats.stop();
        await pause(2_000);
        await nats.start();
        natsBackAt = Date.now();
      })();
      const walks = Promise.all(Array.from({ length: WALKAROUNDS }, (_, n) => walkaround(n)));
      // Creates with fresh keys up to and across the NATS kill, each retried with its key until answered.
      const creates: Promise<{ id: string }>[] = [];
      while (natsBackAt === 0) {
        creates.push(createWith(`burst-${creates.length}`));
        await new Promise((r) => setTimeout(r, CREATE_EVERY_MS));
      }
      const [walked, burstMade] = await Promise.all([walks, Promise.all(creates), faults]);
      const walkIds = [...walked, failover.id];

      // The leader's recovery: after its SIGKILL, when the next one led; after the NATS restart, when the leader was connected again.
      const operators = launched.filter(([name]) => name.startsWith("operator")).map(([, p]) => p);
      const ledAt = operators.flatMap((p) => p.logs.filter((l) => l.msg === "leading").map((l) => l.time as number));
      const nextLedAt = Math.min(...ledAt.filter((t) => t > leaderKilledAt));
      const leaderNow = operators.find((p) => p.logs.some((l) => l.msg === "leading" && (l.time as number) > leaderKilledAt));
      const reconnectedAt = leaderNow?.logs.find(
        (l) => l.msg === "NATS connection status" && l.nats === "reconnect" && (l.time as number) > natsStoppedAt,
      )?.time as number | undefined;
      const during = submits.filter((x) => x.at > leaderKilledAt && x.at < nextLedAt);
      console.log(
        `faults (${store}): restarts so far ${JSON.stringify(Object.fromEntries(restarts))}; leader SIGKILLed, next leader led ${nextLedAt - leaderKilledAt} ms later (OPERATOR_LEASE_MS ${env.OPERATOR_LEASE_MS}); ` +
          `NATS stopped ${natsBackAt - natsStoppedAt} ms, the leader reconnected ${reconnectedAt === undefined ? "?" : reconnectedAt - natsStoppedAt} ms after it was stopped and kept leading; ` +
          `submits during the failover: the one sent ${(failoverSubmit?.at ?? 0) - leaderKilledAt} ms after the kill answered ${failoverSubmit?.status} at its first try in ${failoverSubmit?.answeredMs} ms, ` +
          `walkaround submits ${during.filter((x) => x.status === 202).length} of ${during.length} answered 202`,
      );
      // Sent while no operator led, and answered 202 at its first try.
      expect(failoverSubmit!.at).toBeLessThan(nextLedAt);
      expect(failoverSubmit!.status).toBe(202);
      expect(nextLedAt - leaderKilledAt).toBeLessThanOrEqual(Number(env.OPERATOR_LEASE_MS) + 1_000);

      // One inspection per key: the burst's references each name one inspection, the one its create answered.
      for (const [n, made] of burstMade.entries()) {
        const listed = await retried(`/v1/inspections?reference=burst-${n}`, {}, (r) => r.status === 200);
        expect(
          (await listed.json()).data.map((i: { id: string }) => i.id),
          `burst-${n}`,
        ).toEqual([made.id]);
      }
      // The leader kept its lease across the NATS restart: no operator exited after NATS went down
      // (the one killed before it was restarted before).
      await new Promise((r) => setTimeout(r, 8_000));
      const lostAfterNats = [...running.entries()].filter(
        ([name, p]) =>
          name.startsWith("operator") &&
          p.logs.some((l) => l.msg === "lost the operator lease; exiting" && (l.time as number) > natsStoppedAt),
      );
      expect(lostAfterNats.map(([name]) => name)).toEqual([]);
      // Every walkaround completes.
      for (const id of walkIds) {
        await until(
          `${id} completed`,
          async () => (await (await retried(`/v1/inspections/${id}`, {}, (r) => r.status === 200)).json()).status,
          (s) => s === "completed",
          120_000,
        );
      }
      // Each event of each walkaround delivered: none lost, no two distinct events for one change. The
      // service promises at least once (receivers dedupe by webhook-id, the event id): the same event
      // delivered again after a crash is allowed, counted and printed.
      const ids = new Set(walkIds);
      const expected = walkIds.length * 5; // created, in_progress, processing, completed, review_required (no VIN confirmed)
      const delivered = await until(
        "every walkaround event delivered",
        () => receiver.received.map((r) => JSON.parse(r.body)).filter((e) => ids.has(e.data.id)),
        (got) => new Set(got.map((e) => e.id)).size >= expected,
        120_000,
      );
      // Submit to the completed webhook, as the client meets it, through the faults.
      const latencies = walkIds
        .map((id) => {
          const done = receiver.received.find((r) => {
            const e = JSON.parse(r.body);
            return e.type === "inspection.completed" && e.data.id === id;
          });
          return done!.at - submittedAt.get(id)!;
        })
        .sort((a, b) => a - b);
      const quantile = (q: number) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)]!;
      console.log(
        `faults (${store}): submit to inspection.completed webhook p50 ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms (${latencies.length} walkarounds: ${latencies.join(", ")} ms)`,
      );
      const perId = new Map<string, number>();
      for (const e of delivered) perId.set(e.id, (perId.get(e.id) ?? 0) + 1);
      const twice = [...perId.entries()].filter(([, n]) => n > 1);
      console.log(
        `faults (${store}): restarts ${JSON.stringify(Object.fromEntries(restarts))}; ${perId.size} events delivered for ${walkIds.length} walkarounds in ${delivered.length} deliveries, ${twice.length} event ids delivered more than once (${delivered.length - perId.size} redeliveries of the same event id); ${burstMade.length} creates, one inspection each`,
      );
      expect(perId.size).toBe(expected);
      for (const id of walkIds) {
        // One event id per type: a redelivery repeats the event, never makes a second one.
        const byType = new Map<string, Set<string>>();
        for (const e of delivered.filter((x) => x.data.id === id)) byType.set(e.type, (byType.get(e.type) ?? new Set()).add(e.id));
        for (const [type, eventIds] of byType) expect(eventIds.size, `${id} ${type}`).toBe(1);
        const types = delivered.filter((e) => e.data.id === id).map((e) => e.type);
        expect(new Set(types), id).toEqual(
          new Set([
            "inspection.created",
            "inspection.in_progress",
            "inspection.processing",
            "inspection.completed",
            "inspection.review_required",
          ]),
        );
      }
    }, 600_000);
  },
);
