import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { Webhook } from "standardwebhooks";
import { parseAllDocuments } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey, webhookSecret } from "../../bin/commands/keys.ts";
import { apiStatus } from "../../core/adapters/kubernetes/api-status.ts";
import { loadConfig } from "../../core/runtime/config.ts";
import { REQUIRED_ANGLES } from "../../core/schemas/capture.ts";
import { INSPECTION_RESOURCE as WHERE } from "../../core/schemas/inspection-resource.ts";
import { startNatsServer, startVersityGw, type NatsServer, type VersityGw } from "../helpers/go-servers.ts";
import { type ControlPlane, kubeTools, startControlPlane } from "../helpers/kube-control-plane.ts";
import { carPhotos } from "../helpers/photos.ts";
import { freePort, VALID_VIN } from "../helpers/service.ts";
import { ServiceProcess } from "../helpers/service-process.ts";
import { until, WebhookReceiver } from "../helpers/webhook-receiver.ts";

const CHART = join(import.meta.dirname, "../../charts/vehicle-inspection");
const NAMESPACE = "vi";
const RETENTION_S = 8;
const ANGLES = [...REQUIRED_ANGLES];
const photos = carPhotos(ANGLES.length);

/**
 * Cluster mode as the chart runs it, against a real kube-apiserver, nats-server and S3 server: two
 * `api` replicas, an `operator` and an `inference` worker as processes of their own, each api and
 * operator signed in with a token of the service account the chart makes for it, so the chart's RBAC
 * is what they run under. The inspections are Inspection resources (INSPECTION_STORE=kubernetes);
 * nothing is shared under DATA_DIR (each process has its own).
 */
describe("cluster mode with the Inspection resources as the store, under the chart's service accounts", () => {
  let k: ControlPlane;
  let nats: NatsServer;
  let s3: VersityGw;
  let receiver: WebhookReceiver;
  let dir: string;
  let env: Record<string, string>;
  const urls: string[] = [];
  const kubeconfigs: Record<"api" | "operator", string> = { api: "", operator: "" };
  const processes: ServiceProcess[] = [];

  /** A kubeconfig that signs in with a token of the chart's service account for `workload`. */
  const tokenKubeconfig = async (workload: "api" | "operator") => {
    const token = (await k.kubectl("create", "token", `r-vehicle-inspection-${workload}`, "-n", NAMESPACE, "--duration=2h")).trim();
    const admin = new KubeConfig();
    admin.loadFromFile(k.kubeconfig);
    const cluster = admin.getCurrentCluster()!;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [cluster],
      users: [{ name: workload, token }],
      contexts: [{ name: workload, cluster: cluster.name, user: workload, namespace: NAMESPACE }],
      currentContext: workload,
    });
    const file = join(dir, `${workload}.kubeconfig`);
    writeFileSync(file, kc.exportConfig());
    return file;
  };

  const started = async (workload: string, extra: Record<string, string>, message: string) => {
    const p = new ServiceProcess({ ...env, DATA_DIR: mkdtempSync(join(dir, `${workload}-`)), ...extra }, workload);
    processes.push(p);
    await p.line((l) => l.msg === message, 90_000);
    return p;
  };

  beforeAll(async () => {
    [k, nats, s3, receiver] = await Promise.all([startControlPlane(), startNatsServer(), startVersityGw(), new WebhookReceiver().start()]);
    dir = mkdtempSync(join(tmpdir(), "vi-cluster-kube-"));
    await k.installCrds();
    await k.kubectl("create", "namespace", NAMESPACE);
    // The chart's accounts, Roles and RoleBindings for cluster mode, as helm would install them.
    const values = ["publicUrl=https://inspect.example.com", "mode=cluster", "nats.url=nats://nats:4222", "s3.bucket=vi-photos"];
    const manifest = execFileSync(
      kubeTools().helm,
      ["template", "r", CHART, "--namespace", NAMESPACE, ...values.flatMap((v) => ["--set", v])],
      {
        encoding: "utf8",
      },
    );
    const rbac = parseAllDocuments(manifest)
      .map((d) => d.toJS())
      .filter((d) => d && ["ServiceAccount", "Role", "RoleBinding"].includes(d.kind));
    await k.kubectlResult(["apply", "-n", NAMESPACE, "-f", "-"], JSON.stringify({ apiVersion: "v1", kind: "List", items: rbac }));
    kubeconfigs.api = await tokenKubeconfig("api");
    kubeconfigs.operator = await tokenKubeconfig("operator");
    const ports = [await freePort(), await freePort()];
    urls.push(...ports.map((p) => `http://127.0.0.1:${p}`));
    env = {
      HOST: "127.0.0.1",
      PUBLIC_URL: urls[0]!,
      NATS_URL: nats.url,
      ...s3.clientEnv,
      INSPECTION_STORE: "kubernetes",
      POD_NAMESPACE: NAMESPACE,
      INSPECTION_RESOURCES_RETENTION_SECONDS: String(RETENTION_S),
      WEBHOOKS_ALLOW_PRIVATE_TARGETS: "true",
      CONTROLLER_POLL_MS: "100",
      DAMAGE_MODEL: "none",
      PARTS_MODEL: "none",
      LOG_LEVEL: "info",
    };
    await started(
      "operator",
      { KUBECONFIG: kubeconfigs.operator, OPERATOR_LEASE_BACKEND: "kubernetes", OPERATOR_LEASE_NAME: "r-vehicle-inspection-operator" },
      "operator workload started",
    );
    await Promise.all([
      ...ports.map((port) => started("api", { KUBECONFIG: kubeconfigs.api, PORT: String(port) }, "api workload started")),
      started("inference", {}, "inference workload started"),
    ]);
  }, 300_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await Promise.all([nats?.close(), s3?.close(), receiver?.close(), k?.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  let made: { id: string; key: string; completed: Record<string, unknown> };
  const at =
    (url: string, key: string) =>
    (path: string, init: RequestInit = {}) =>
      fetch(url + path, { ...init, headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...init.headers } });

  it("takes an inspection from creation to its signed webhook across two api replicas, its resource shown by kubectl", async () => {
    const config = loadConfig({ ...env, DATA_DIR: dir });
    const key = await createKey(config, "test", "kube-co");
    const secret = await webhookSecret(config, "test", "kube-co");
    const [a, b] = urls.map((u) => at(u, key)) as [ReturnType<typeof at>, ReturnType<typeof at>];
    const body = JSON.stringify({ reference: "kube-1", vehicle: { vin: VALID_VIN }, notify_url: receiver.url });
    const created = await a("/v1/inspections", { method: "POST", body });
    expect(created.status).toBe(201);
    const inspection = await created.json();
    // The api cannot write status: the operator gives the new resource its phase, for kubectl.
    await until(
      "the new resource's phase shown",
      () => k.kubectlResult(["get", "inspection", inspection.id.replace("_", "-"), "-n", NAMESPACE, "-o", "jsonpath={.status.phase}"]),
      (r) => r.stdout === "created",
      10_000,
    );
    // The other replica serves it at once, before its own watch may have brought it.
    const onB = await b(`/v1/inspections/${inspection.id}`);
    expect(onB.status).toBe(200);
    expect((await onB.json()).id).toBe(inspection.id);

    // The customer's photos go to one replica and the other, the submit to the second.
    const token = inspection.capture_url.split("/c/")[1];
    for (const [i, angle] of ANGLES.entries()) {
      const put = await fetch(`${urls[i % 2]}/capture/v1/${token}/photos/${angle}`, {
        method: "PUT",
        body: photos[i],
        headers: { "content-type": "image/jpeg" },
      });
      expect(put.status, angle).toBe(200);
    }
    expect((await fetch(`${urls[1]}/capture/v1/${token}/submit`, { method: "POST" })).status).toBe(202);
    await until(
      "completed",
      async () => (await a(`/v1/inspections/${inspection.id}`)).json(),
      (i: { status: string }) => i.status === "completed",
      90_000,
    );
    const delivery = await until(
      "the inspection.completed webhook",
      () =>
        receiver.received.find((r) => JSON.parse(r.body).type === "inspection.completed" && JSON.parse(r.body).data.id === inspection.id),
      (d) => d !== undefined,
      60_000,
    );
    new Webhook(secret).verify(delivery!.body, {
      "webhook-id": delivery!.headers["webhook-id"] as string,
      "webhook-timestamp": delivery!.headers["webhook-timestamp"] as string,
      "webhook-signature": delivery!.headers["webhook-signature"] as string,
    });
    expect((await b(`/v1/inspections/${inspection.id}/report`)).status).toBe(200);

    // The record is the resource: kubectl shows it with its printer columns, moved by the operator.
    const table = await k.kubectl("get", "inspections", "-n", NAMESPACE);
    console.log(`kubectl get inspections -n ${NAMESPACE} (the store itself):\n${table}`);
    const row = table
      .trim()
      .split("\n")
      .find((l) => l.startsWith(inspection.id.replace("_", "-")))!;
    // No VIN was confirmed: the report waits for a person.
    const name = inspection.id.replace("_", "-");
    expect(row.split(/\s{2,}/).slice(0, 7)).toEqual([name, "completed", "none", "0", "required", VALID_VIN, "kube-1"]);
    const resource = JSON.parse(await k.kubectl("get", "inspection", name, "-n", NAMESPACE, "-o", "json"));
    expect(resource.status.conditions.map((c: { type: string; status: string; reason: string }) => [c.type, c.status, c.reason])).toEqual([
      ["Submitted", "True", "Submitted"],
      ["ReportReady", "True", "Completed"],
      ["Reviewed", "False", "ReviewRequired"],
    ]);
    expect(resource.metadata.labels["inspection.dev/livemode"]).toBe("false");
    // Kubernetes Events tell each move, as kubectl describe shows them (issue 31).
    const told = await until(
      "the Events of its moves",
      async () =>
        JSON.parse(await k.kubectl("get", "events", "-n", NAMESPACE, "--field-selector", `involvedObject.name=${name}`, "-o", "json"))
          .items as { reason: string; type: string; reportingComponent: string }[],
      (items) => items.some((e) => e.reason === "ReviewRequired"),
      20_000,
    );
    expect(told.map((e) => e.reason)).toEqual(expect.arrayContaining(["CaptureOpened", "Submitted", "Completed", "ReviewRequired"]));
    expect(told.every((e) => e.type === "Normal" && e.reportingComponent === "inspection.dev/operator")).toBe(true);
    // kubectl describe finds them by the Inspection's uid, which each names.
    const described = await k.kubectl("describe", "inspection", name, "-n", NAMESPACE);
    const listed = described.slice(described.lastIndexOf("\nEvents:"));
    console.log(`kubectl describe inspection ${name} (its Events):${listed}`);
    for (const reason of ["CaptureOpened", "Submitted", "Completed", "ReviewRequired"])
      expect(listed, reason).toMatch(new RegExp(`\\n\\s+Normal\\s+${reason}\\s`));

    // Two reviews at once, one through each replica: both are kept as events, the later stands, and
    // the operator shows it on the resource.
    const reviewed = await Promise.all(
      [a, b].map((on, i) =>
        on(`/v1/inspections/${inspection.id}/review`, { method: "POST", body: JSON.stringify({ note: `replica ${i}` }) }),
      ),
    );
    expect(reviewed.map((r) => r.status)).toEqual([200, 200]);
    const events = await until(
      "both inspection.reviewed events",
      async () =>
        ((await (await a("/v1/events?limit=100")).json()).data as { type: string; data: { id: string } }[]).filter(
          (e) => e.type === "inspection.reviewed" && e.data.id === inspection.id,
        ),
      (e) => e.length === 2,
      20_000,
    );
    expect(events).toHaveLength(2);
    const stands = (await (await b(`/v1/inspections/${inspection.id}/report`)).json()).review;
    expect(stands).toMatchObject({ status: "completed", reviewed_by: expect.stringMatching(/^key_/) });
    expect(["replica 0", "replica 1"]).toContain(stands.note);
    const shown = await until(
      "the Reviewed condition",
      async () => JSON.parse(await k.kubectl("get", "inspection", name, "-n", NAMESPACE, "-o", "json")).status,
      (st: { review?: string; conditions: { type: string }[] }) => st.review === "completed",
      20_000,
    );
    expect(shown.conditions.find((c: { type: string }) => c.type === "Reviewed")).toMatchObject({ status: "True", reason: "Reviewed" });
    made = { id: inspection.id, key, completed: await (await a(`/v1/inspections/${inspection.id}`)).json() };
  });

  it("lets the api's account write the resource but never its status, and the operator's write status but make none", async () => {
    const api = (file: string) => {
      const kc = new KubeConfig();
      kc.loadFromFile(file);
      return kc.makeApiClient(CustomObjectsApi);
    };
    const where = { group: WHERE.group, version: WHERE.version, plural: WHERE.plural, namespace: NAMESPACE };
    const name = made.id.replace("_", "-");
    const asApi = api(kubeconfigs.api);
    const current = (await asApi.getNamespacedCustomObject({ ...where, name })) as { status: Record<string, unknown> };
    const forged = { ...current, status: { ...current.status, phase: "failed" } };
    const refused = await asApi.replaceNamespacedCustomObjectStatus({ ...where, name, body: forged }).catch((e: unknown) => e);
    expect(apiStatus(refused)).toBe(403);
    const asOperator = api(kubeconfigs.operator);
    const made2 = await asOperator
      .createNamespacedCustomObject({ ...where, body: { ...current, metadata: { name: "insp-forged" } } })
      .catch((e: unknown) => e);
    expect(apiStatus(made2)).toBe(403);
    // What the operator may do, it did: the status it wrote is still there.
    expect(((await asApi.getNamespacedCustomObject({ ...where, name })) as { status: { phase: string } }).status.phase).toBe("completed");
  });

  it("archives an inspection deleted with kubectl, open or not, before its resource goes, and still serves it (issue 31)", async () => {
    const api = at(urls[0]!, made.key);
    const body = JSON.stringify({ reference: "kube-deleted", vehicle: { vin: VALID_VIN } });
    const created = await (await api("/v1/inspections", { method: "POST", body })).json();
    const name = created.id.replace("_", "-");
    const before = JSON.parse(await k.kubectl("get", "inspection", name, "-n", NAMESPACE, "-o", "json"));
    expect(before.metadata.finalizers).toEqual(["inspection.dev/archive"]);
    const listed = (await (await api("/v1/events?limit=100")).json()).data as { id: string; data: { id: string } }[];
    const createdEvent = listed.find((e) => e.data.id === created.id)!;
    // kubectl waits for the delete to complete: the operator archives, then lets it go.
    await k.kubectl("delete", "inspection", name, "-n", NAMESPACE, "--timeout=60s");
    expect((await k.kubectlResult(["get", "inspection", name, "-n", NAMESPACE])).code).not.toBe(0);
    const served = await api(`/v1/inspections/${created.id}`);
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ id: created.id, reference: "kube-deleted", status: "created" });
    // Its events went with the resource, as a pruned one's do: found by id in the archive.
    const event = await api(`/v1/events/${createdEvent.id}`);
    expect(event.status).toBe(200);
    expect(await event.json()).toMatchObject({ id: createdEvent.id, type: "inspection.created" });
  });

  it("tells a hand-made Inspection, in its status, why the service ignores it (issue 31)", async () => {
    const manifest = JSON.stringify({
      apiVersion: "inspection.dev/v1",
      kind: "Inspection",
      metadata: { name: "insp-handmade", namespace: NAMESPACE },
      spec: { vehicle: { vin: VALID_VIN }, accountId: "acct_handmade", livemode: false },
    });
    expect((await k.kubectlResult(["create", "-f", "-"], manifest)).code).toBe(0);
    const status = await until(
      "the status saying why",
      async () => JSON.parse(await k.kubectl("get", "inspection", "insp-handmade", "-n", NAMESPACE, "-o", "json")).status,
      (st: { conditions?: { type: string; status: string; reason: string; message: string }[] } | undefined) =>
        st?.conditions?.some((c) => c.type === "Recognized") === true,
      20_000,
    );
    const recognized = status!.conditions!.find((c) => c.type === "Recognized")!;
    expect(recognized).toMatchObject({ status: "False", reason: "NotMadeByTheService" });
    expect(recognized.message).toMatch(/POST \/v1\/inspections/);
    await k.kubectl("delete", "inspection", "insp-handmade", "-n", NAMESPACE, "--timeout=30s");
  });

  it("prunes the finished resource after the retention, and still serves its record, report, photos and events from the archive", async () => {
    const name = made.id.replace("_", "-");
    await until(
      "the resource pruned",
      () => k.kubectlResult(["get", "inspection", name, "-n", NAMESPACE]),
      (r) => r.code !== 0 && r.stderr.includes("NotFound"),
      (RETENTION_S + 30) * 1000,
    );
    for (const url of urls) {
      const get = at(url, made.key);
      const record = await get(`/v1/inspections/${made.id}`);
      expect(record.status).toBe(200);
      expect(await record.json()).toEqual(made.completed);
      const report = await get(`/v1/inspections/${made.id}/report`);
      expect(report.status).toBe(200);
      const photo = (await report.json()).photos[0];
      expect((await fetch(photo.url, { headers: { authorization: `Bearer ${made.key}` } })).status).toBe(200);
    }
    // Listed still, with what is in the cluster.
    const list = await (await at(urls[0]!, made.key)("/v1/inspections?limit=10")).json();
    expect(list.data.map((i: { id: string }) => i.id)).toContain(made.id);
    const events = at(urls[1]!, made.key);
    // Its events went with the resource: out of the list (which covers the retention), found by id.
    const listed = await (await events("/v1/events?limit=100")).json();
    expect(listed.data.some((e: { data: { id: string } }) => e.data.id === made.id)).toBe(false);
    const delivered = receiver.received.map((r) => JSON.parse(r.body)).find((e) => e.data.id === made.id)!;
    const event = await events(`/v1/events/${delivered.id}`);
    expect(event.status).toBe(200);
    expect((await event.json()).id).toBe(delivered.id);
    // Found, but not sent again: its deliveries were settled before the prune, and the record is archived.
    const resend = await events(`/v1/events/${delivered.id}/resend`, { method: "POST" });
    expect(resend.status).toBe(409);
    expect((await resend.json()).error).toMatchObject({ code: "event_not_deliverable", message: expect.stringContaining("archived") });
  });
});
