import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DETECTION_QUEUE, type DeadDetectionJob, jobIdFor } from "../../core/adapters/nats/detection-queue.ts";
import { connectNats, type Nats } from "../../core/adapters/nats/nats-connection.ts";
import { NatsDetectionRunner } from "../../core/adapters/nats/nats-detection-runner.ts";
import { S3BlobStore } from "../../core/adapters/s3/s3-blob-store.ts";
import { photoBlobKey } from "../../core/domain/blob-keys.ts";
import { DEFAULT_MODELS } from "../../core/runtime/config.ts";
import { newId } from "../../core/domain/ids.ts";
import { EXTERIOR_ANGLES } from "../../core/schemas/capture.ts";
import { DetectionInterrupted, type PhotoToInspect } from "../../core/ports/detection-runner.ts";
import { startNatsServer, startVersityGw, type NatsServer, type VersityGw } from "../helpers/go-servers.ts";
import { carPhotos, DAMAGE_VALID, DAMAGED_CASES } from "../helpers/photos.ts";
import { withModels } from "../helpers/service.ts";
import { type LogLine, ServiceProcess } from "../helpers/service-process.ts";
import { until } from "../helpers/webhook-receiver.ts";

const DAMAGED = DAMAGED_CASES;
const QUALITY = { brightness: 0.5, sharpness: 100, glare: 0, passed: true, problems: [] };
/** Short, so a job whose worker was killed goes to the other within seconds; running jobs report progress well within it. */
const ACK_WAIT_MS = 3_000;
/** Shorter than the longest job below, so a stop interrupts it. */
const GRACE_MS = 2_000;
const WORKER_STARTED = "inference workload started";

/**
 * Detection as a JetStream work queue, end to end: a real nats-server and a real S3 server (both
 * built from the Go module proxy), NatsDetectionRunners in this process as the operator holds them,
 * and `vehicle-inspection inference` workers as processes of their own, running the shipped models
 * over real photos put into the bucket under the keys the capture route uses.
 */
describe.skipIf(!existsSync(DEFAULT_MODELS.damage))("detection on a JetStream work queue, run by inference workers", () => {
  let nats: NatsServer;
  let s3: VersityGw;
  let conn: Nats;
  let jsm: JetStreamManager;
  let blobs: S3BlobStore;
  let dataDir: string;
  let env: Record<string, string>;
  const workers: ServiceProcess[] = [];
  /** Workers killed or stopped by a test. */
  const gone = new Set<ServiceProcess>();
  const runners: NatsDetectionRunner[] = [];

  const startWorker = async () => {
    const worker = new ServiceProcess(env, "inference");
    workers.push(worker);
    await worker.line((l) => l.msg === WORKER_STARTED, 60_000);
    return worker;
  };
  const openRunner = async () => {
    const runner = await NatsDetectionRunner.open(conn);
    runners.push(runner);
    return runner;
  };

  beforeAll(async () => {
    [nats, s3] = await Promise.all([startNatsServer(), startVersityGw()]);
    // The AWS SDK's standard chain reads these, here and in the workers.
    process.env.AWS_ACCESS_KEY_ID = s3.accessKey;
    process.env.AWS_SECRET_ACCESS_KEY = s3.secretKey;
    dataDir = mkdtempSync(join(tmpdir(), "vi-inference-"));
    env = {
      DATA_DIR: dataDir,
      NATS_URL: nats.url,
      METRICS_PORT: "0",
      ...s3.clientEnv,
      INFERENCE_ACK_WAIT_MS: String(ACK_WAIT_MS),
      SHUTDOWN_GRACE_MS: String(GRACE_MS),
      LOG_LEVEL: "info",
      ...withModels,
    };
    blobs = new S3BlobStore({ bucket: s3.bucket, endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true });
    conn = await connectNats({ url: nats.url, name: "nats-detection-test" });
    jsm = await conn.js.jetstreamManager();
    await Promise.all([startWorker(), startWorker()]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(runners.map((r) => r.close()));
    for (const w of workers) w.kill();
    await conn?.close();
    await Promise.all([nats?.close(), s3?.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** An inspection's photos in the bucket, as the capture route stores them. */
  async function inspectionWith(photos: { angle: string; bytes: Buffer }[]): Promise<{ id: string; photos: PhotoToInspect[] }> {
    const id = newId("insp");
    const stored = await Promise.all(
      photos.map(async ({ angle, bytes }) => {
        const mediaId = newId("med");
        const blobKey = photoBlobKey(id, mediaId);
        await blobs.put(blobKey, bytes, "image/jpeg");
        return { mediaId, angle, blobKey, quality: QUALITY };
      }),
    );
    return { id, photos: stored };
  }
  const damaged = (i: number) => ({ angle: DAMAGED[i]!.angle, bytes: readFileSync(join(DAMAGE_VALID, "images", DAMAGED[i]!.file)) });
  /** Ten photos: a job that runs for a second or more, so it is still running when a test acts on it. */
  const manyPhotos = () => [
    ...DAMAGED.map((_, i) => damaged(i)),
    ...carPhotos(6).map((bytes, i) => ({ angle: EXTERIOR_ANGLES[i]!, bytes })),
  ];

  /** The log lines of every worker that match, oldest first, with the worker that wrote each. */
  const linesOf = (match: (l: LogLine) => boolean) =>
    workers
      .flatMap((w) => w.logs.filter(match).map((line) => ({ w, line })))
      .sort((x, y) => (x.line.time as number) - (y.line.time as number));
  const started = (jobId: string) => linesOf((l) => l.msg === "detection started" && l.job_id === jobId);
  /** The job's "detection finished" lines, once there is one: the worker logs it after the result is published and the job acked. */
  const finished = async (jobId: string) => {
    const match = (l: LogLine) => l.msg === "detection finished" && l.job_id === jobId;
    return until(
      "the job finished",
      () => linesOf(match),
      (lines) => lines.length > 0,
      30_000,
    );
  };
  /** Detection of a first attempt, once a worker has started its job; `onResult` counts how often it resolves. */
  const detectUntilStarted = async (id: string, photos: PhotoToInspect[], onResult = () => {}) => {
    const jobId = jobIdFor(id, 0);
    const done = (await openRunner()).detect(id, photos, 0).then((result) => {
      onResult();
      return result;
    });
    const taken = await until(
      "a worker started the job",
      () => started(jobId),
      (s) => s.length === 1,
      60_000,
    );
    return { jobId, done, worker: taken[0]!.w };
  };
  const jobsPublished = async () => (await jsm.streams.info(DETECTION_QUEUE.jobs.stream)).state.last_seq;

  it("spreads concurrent jobs over both workers, with findings on the damaged photos and evidence in the bucket", async () => {
    const runner = await openRunner();
    const inspections = await Promise.all(DAMAGED.map((_, i) => inspectionWith([damaged(i), damaged((i + 1) % DAMAGED.length)])));
    // A job whose detection throws (a blob key outside the store): a failed result, not a stuck job.
    const broken = await inspectionWith([]);
    const brokenPhotos = [{ mediaId: newId("med"), angle: "front", blobKey: "../outside.jpg", quality: QUALITY }];
    const since = Date.now();
    const [results, failure] = await Promise.all([
      Promise.all(inspections.map((x) => runner.detect(x.id, x.photos, 0))),
      runner.detect(broken.id, brokenPhotos, 0).then(
        () => null,
        (error: Error) => error,
      ),
    ]);
    const ms = Date.now() - since;

    for (const [i, result] of results.entries()) {
      const { photos } = inspections[i]!;
      expect(result.model?.name).toBeTruthy();
      expect(result.photos.map((p) => p.readable)).toEqual([true, true]);
      const first = result.detections.filter((d) => d.mediaId === photos[0]!.mediaId).map((d) => d.type);
      expect(first, DAMAGED[i]!.file).toContain(DAMAGED[i]!.type);
      // The worker wrote each evidence photo into the same bucket, under the inspection.
      for (const d of result.detections) expect((await blobs.get(d.evidence!.blobKey))?.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    }
    expect(failure?.message).toMatch(/escapes the store/);

    // Both workers took jobs; each job ran once, on its first delivery (progress reports held ack_wait off).
    const jobIds = [...inspections, broken].map((x) => jobIdFor(x.id, 0));
    const runs = jobIds.map((jobId) => started(jobId));
    expect(runs.map((r) => r.length)).toEqual(jobIds.map(() => 1));
    expect(runs.every((r) => r[0]!.line.delivery === 1)).toBe(true);
    expect(new Set(runs.map((r) => r[0]!.w)).size).toBe(2);
    // Every job acked: nothing left in the work queue.
    expect((await jsm.streams.info(DETECTION_QUEUE.jobs.stream)).state.messages).toBe(0);
    console.log(`${jobIds.length} jobs on 2 workers: ${ms} ms`);
  }, 180_000);

  it("hands a runner opened after a restart the result of the job the closed one queued, without running it again", async () => {
    // 160 photos: the job runs for longer than ack_wait (about 40 ms a photo here), so it is still running when the runners
    // below ask for it, and only its progress reports keep it from going to the other worker.
    const { id, photos } = await inspectionWith(Array.from({ length: 16 }, manyPhotos).flat());
    const jobId = jobIdFor(id, 2);
    const before = await jobsPublished();
    const first = await openRunner();
    const interrupted = first.detect(id, photos, 2);
    await until(
      "a worker started the job",
      () => started(jobId).length,
      (n) => n === 1,
      60_000,
    );
    // The operator stops mid-job: its wait is interrupted (not a failed attempt); the job runs on.
    await first.close();
    await expect(interrupted).rejects.toBeInstanceOf(DetectionInterrupted);

    // Two runners (the restarted operator, and a second replica racing it) ask for the same attempt at once.
    const [second, third] = await Promise.all([openRunner(), openRunner()]);
    const asked = Promise.all([second.detect(id, photos, 2), third.detect(id, photos, 2)]);
    expect((await jsm.streams.info(DETECTION_QUEUE.jobs.stream)).state.messages).toBe(1); // still queued, unacked
    const [a, b] = await asked;
    expect(a).toEqual(b);
    expect(a.detections.map((d) => d.type)).toContain(DAMAGED[0].type);
    // Asked once more after it finished: the stored result, at once.
    const since = Date.now();
    expect(await (await openRunner()).detect(id, photos, 2)).toEqual(a);
    expect(Date.now() - since).toBeLessThan(2_000);

    // One job published and run once, whoever asked and however often.
    expect(await jobsPublished()).toBe(before + 1);
    expect(started(jobId)).toHaveLength(1);
    const [run] = await finished(jobId);
    expect(await finished(jobId)).toHaveLength(1);
    expect(run!.line.ms).toBeGreaterThan(ACK_WAIT_MS);
    console.log(`a job of ${photos.length} photos ran ${run!.line.ms} ms on one delivery (ack_wait ${ACK_WAIT_MS} ms)`);
    // The job id is the message id: the same job published again within the duplicate window is not stored again.
    const again = await conn.js.publish(DETECTION_QUEUE.jobs.subject(id), JSON.stringify({ jobId, inspectionId: id, photos }), {
      msgID: jobId,
    });
    expect(again.duplicate).toBe(true);
    expect(await jobsPublished()).toBe(before + 1);
  }, 180_000);

  it("hands a job back to the queue when its worker stops gracefully and the job outlasts the grace period", async () => {
    const { id, photos } = await inspectionWith(Array.from({ length: 16 }, manyPhotos).flat());
    const { jobId, done, worker: stopping } = await detectUntilStarted(id, photos);
    // SIGTERM: the worker takes no more jobs, waits SHUTDOWN_GRACE_MS, then interrupts the job and naks it.
    expect(await stopping.stop()).toBe(0);
    gone.add(stopping);
    const interrupted = stopping.logs.find((l) => l.msg === "detection interrupted by shutdown; the job goes back to the queue");
    expect(interrupted?.job_id).toBe(jobId);
    expect(stopping.logs.some((l) => l.msg === "detection finished" && l.job_id === jobId)).toBe(false);

    const result = await done;
    expect(result.detections.map((d) => d.type)).toContain(DAMAGED[0].type);
    const runs = started(jobId);
    expect(runs.map((r) => [r.w === stopping, r.line.delivery])).toEqual([
      [true, 1],
      [false, 2],
    ]);
    // Handed back (nak), not left to ack_wait: the other worker had it at once.
    expect((runs[1]!.line.time as number) - (interrupted!.time as number)).toBeLessThan(ACK_WAIT_MS);
    // A worker in its place, for the tests below.
    await startWorker();
  }, 180_000);

  it("gives a job whose worker was killed mid-run to the other worker once ack_wait has passed", async () => {
    const { id, photos } = await inspectionWith(manyPhotos());
    let resolved = 0;
    const { jobId, done, worker: victim } = await detectUntilStarted(id, photos, () => resolved++);
    victim.kill();
    gone.add(victim);
    expect(await victim.exited).toBe("SIGKILL");
    const killedAt = Date.now();

    const result = await done;
    expect(resolved).toBe(1);
    expect(result.detections.map((d) => d.type)).toContain(DAMAGED[0].type);
    // The survivor got the job again (its second delivery), after ack_wait, and finished it.
    const runs = started(jobId);
    expect(runs).toHaveLength(2);
    expect(runs[1]!.w).not.toBe(victim);
    expect(runs[1]!.line.delivery).toBe(2);
    expect((await finished(jobId)).map((x) => x.w)).toEqual([runs[1]!.w]);
    console.log(`redelivered and finished ${Date.now() - killedAt} ms after the kill (ack_wait ${ACK_WAIT_MS} ms)`);
  }, 180_000);

  it("rides out a NATS restart: the worker and the runner reconnect, and the next job runs", async () => {
    const runner = await openRunner();
    await nats.stop();
    await new Promise((r) => setTimeout(r, 1_000));
    await nats.start();
    const { id, photos } = await inspectionWith([damaged(1)]);
    const since = Date.now();
    // Until the client has reconnected a publish fails, as a detection attempt would (the operator retries it).
    const result = await until(
      "a detection after the restart",
      () => runner.detect(id, photos, 0).catch((error: Error) => error),
      (r) => !(r instanceof Error),
      30_000,
    );
    expect(result).not.toBeInstanceOf(Error);
    expect(started(jobIdFor(id, 0))).toHaveLength(1);
    console.log(`first job after a NATS restart done in ${Date.now() - since} ms`);
  }, 120_000);

  it("records a job every worker died on as failed and dead on its last delivery, without running it", async () => {
    // No worker running: this test plays the workers that die, pulling the job and never answering.
    // Stopped with SIGTERM: idle, each exits at once and cleanly.
    for (const w of workers.filter((w) => !gone.has(w))) expect(await w.stop()).toBe(0);
    gone.clear();
    workers.length = 0;
    const { id, photos } = await inspectionWith([damaged(0)]);
    const jobId = jobIdFor(id, 1);
    const runner = await openRunner();
    const failed = runner.detect(id, photos, 1).then(
      () => null,
      (error: Error) => error,
    );
    const consumer = await conn.js.consumers.get(DETECTION_QUEUE.jobs.stream, DETECTION_QUEUE.consumer);
    for (let delivery = 1; delivery < DETECTION_QUEUE.maxDeliver; delivery++) {
      const msg = await consumer.next({ expires: ACK_WAIT_MS * 3 });
      expect([msg?.info.deliveryCount, msg?.json<{ jobId: string }>().jobId]).toEqual([delivery, jobId]);
    }

    const worker = await startWorker();
    expect((await failed)?.message).toMatch(/delivered 4 times and no worker finished it/);
    const dead = await jsm.streams.getMessage(DETECTION_QUEUE.dead.stream, { last_by_subj: DETECTION_QUEUE.dead.subject(id) });
    expect(dead?.json<DeadDetectionJob>()).toMatchObject({ deliveries: 4, job: { jobId, inspectionId: id, photos } });
    // The result is published before the job is termed and the line logged.
    await worker.line((l) => l.msg === "detection job dead-lettered" && l.job_id === jobId);
    expect(worker.logs.filter((l) => l.job_id === jobId).map((l) => l.msg)).toEqual(["detection job dead-lettered"]);
    // Termed (a term is not answered, so it is waited for): gone from the work queue, never delivered again.
    const queued = async () => (await jsm.streams.info(DETECTION_QUEUE.jobs.stream)).state.messages;
    await until("the job removed from the queue", queued, (n) => n === 0, 5_000);
  }, 180_000);
});

describe("vehicle-inspection inference", () => {
  it("refuses to start without NATS_URL, with a usage error", () => {
    const { NATS_URL: _, ...env } = process.env;
    const cli = join(import.meta.dirname, "../../bin/vehicle-inspection.ts");
    const run = spawnSync(process.execPath, [cli, "inference"], { env, encoding: "utf8", timeout: 30_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^vehicle-inspection: inference takes its jobs from NATS: set NATS_URL/);
    expect(run.stderr).toMatch(/inference {2,}cluster mode: a detection worker/);
  });
});
