import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { api } from "../../bin/commands/api.ts";
import { inference } from "../../bin/commands/inference.ts";
import { operator } from "../../bin/commands/operator.ts";
import { start } from "../../bin/commands/start.ts";
import { startNatsServer, startVersityGw } from "./go-servers.ts";
import { type ControlPlane, startControlPlane } from "./kube-control-plane.ts";
import { createKey, webhookSecret } from "../../bin/commands/keys.ts";
import { DEFAULT_MODELS, loadConfig, type Config } from "../../core/runtime/config.ts";
import { freePort } from "./free-port.ts";

export { freePort };

export type TestService = {
  url: string;
  config: Config;
  dataDir: string;
  /** Where /metrics is served (METRICS_PORT, any free port here); null in the cluster composition, whose workloads each have one. */
  metricsUrl: string | null;
  /** What a CLI command needs to reach this service's stores: DATA_DIR, and NATS_URL in the cluster composition. */
  cliEnv: Record<string, string>;
  /** Where the blob under `key` is a file: under DATA_DIR/blobs, or in the S3 server's bucket directory (cluster composition). */
  blobPath(...key: string[]): string;
  key(env?: "test" | "live", account?: string): Promise<string>;
  secret(env?: "test" | "live", account?: string): Promise<string>;
  api(key: string, path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  close(): Promise<void>;
};

/**
 * The whole embedded service, in this process, on a free port on loopback, with its own data
 * directory. Without the damage and parts models unless a test asks for them (`withModels`), so the
 * backbone's tests do not depend on what a model sees in a photo.
 */
export async function startService(env: Record<string, string> = {}): Promise<TestService> {
  const dataDir = mkdtempSync(join(tmpdir(), "vi-test-"));
  const baseEnv = {
    DATA_DIR: dataDir,
    PORT: "0",
    // The operator and inference workloads' probes and metrics (cluster composition): any free port.
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    WEBHOOKS_ALLOW_PRIVATE_TARGETS: "true",
    RATE_LIMIT_TEST_PER_SECOND: "10000",
    RATE_LIMIT_LIVE_PER_SECOND: "10000",
    RATE_LIMIT_FAILED_AUTH_PER_MINUTE: "100000",
    CONTROLLER_POLL_MS: "100",
    DAMAGE_MODEL: "none",
    PARTS_MODEL: "none",
    JUDGE_MODEL: "none",
    CLOSEUP_MODEL: "none",
    ...env,
  };
  const composed = process.env.VI_TEST_COMPOSITION;
  const cluster = composed === "cluster" || composed === "kubernetes" ? await clusterServers(composed === "kubernetes") : null;
  // Chosen after the servers above are up: while they start (a kube-apiserver takes seconds and
  // opens many connections), a port chosen before could be handed to one of them (EADDRINUSE).
  const port = await freePort();
  const config = loadConfig({ ...baseEnv, ...cluster?.env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` });
  const service = cluster ? await composition(config, cluster) : await start(config);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    config,
    dataDir,
    metricsUrl: "metricsPort" in service ? `http://127.0.0.1:${service.metricsPort}` : null,
    cliEnv: { DATA_DIR: dataDir, ...(cluster ? { NATS_URL: cluster.env.NATS_URL } : {}) },
    blobPath: (...key) => join(cluster?.bucketDir ?? join(dataDir, "blobs"), ...key),
    key: (e = "test", account = "acme") => createKey(config, e, account),
    secret: (e = "test", account = "acme") => webhookSecret(config, e, account),
    api: apiAt(url).api,
    close: async () => {
      await service.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A service's URL and its API called with a key: what the capture helpers need of a service (walkaround.ts). */
export type ServiceApi = Pick<TestService, "url" | "api">;

/**
 * The API of the service at `url`, called with a key as TestService.api calls it: for a service this
 * file did not start (a process of its own, another installation).
 */
export function apiAt(url: string): ServiceApi {
  return {
    url,
    api: (key, path, init = {}) => {
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${key}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set("content-type", "application/json");
        body = JSON.stringify(init.json);
      }
      return fetch(url + path, { ...init, headers, body });
    },
  };
}

/** PUBLIC_URL must name the port before the service starts, so a free one is found first. */
export const withModels = {
  DAMAGE_MODEL: DEFAULT_MODELS.damage,
  PARTS_MODEL: DEFAULT_MODELS.parts,
  JUDGE_MODEL: DEFAULT_MODELS.judge,
  CLOSEUP_MODEL: DEFAULT_MODELS.closeup,
};

export const VALID_VIN = "1HGCM82633A004352";
export const OTHER_VALID_VIN = "5YJ3E1EA2KF317000";

/**
 * VI_TEST_COMPOSITION=cluster runs the same tests against the cluster mode's composition: a real
 * nats-server and versitygw for each service, and the `api`, `operator` and `inference` workloads
 * (in this process, each with its own services, as separate processes would have; only the SQLite
 * store under DATA_DIR is shared, as on one machine). VI_TEST_COMPOSITION=kubernetes keeps the
 * inspections as Inspection resources instead (INSPECTION_STORE=kubernetes): a real kube-apiserver
 * for the test file, a namespace for each service, and nothing shared under DATA_DIR. `npm test`
 * runs the integration suite all three ways.
 */
async function clusterServers(kubernetes: boolean) {
  const [nats, s3, namespace] = await Promise.all([startNatsServer(), startVersityGw(), kubernetes ? kubeNamespace() : null]);
  // The AWS SDK reads its credentials from this process's environment, and the Kubernetes client its KUBECONFIG.
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: s3.accessKey, AWS_SECRET_ACCESS_KEY: s3.secretKey });
  return {
    env: { NATS_URL: nats.url, ...s3.clientEnv, ...(namespace ? { INSPECTION_STORE: "kubernetes", POD_NAMESPACE: namespace } : {}) },
    bucketDir: s3.bucketDir,
    close: () => Promise.all([nats.close(), s3.close()]),
  };
}

let controlPlane: Promise<ControlPlane> | undefined;
let namespaces = 0;
/**
 * A new namespace on the test file's control plane, started on first use with the CRD applied. Its
 * servers are killed when the file's process exits (test/helpers/go-servers.ts), as the file's
 * services share it until then.
 */
async function kubeNamespace(): Promise<string> {
  controlPlane ??= (async () => {
    const plane = await startControlPlane();
    await plane.installCrds();
    process.env.KUBECONFIG = plane.kubeconfig;
    return plane;
  })();
  await controlPlane;
  const namespace = `service-${++namespaces}`;
  // Loaded here, not at the top: the other compositions' test processes need none of it.
  const { CoreV1Api, KubeConfig } = await import("@kubernetes/client-node");
  const kc = new KubeConfig();
  kc.loadFromDefault();
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  return namespace;
}

async function composition(config: Config, servers: { close(): Promise<unknown> }): Promise<{ close(): Promise<void> }> {
  const workloads = [await operator(config), await inference(config), await api(config)];
  return {
    close: async () => {
      for (const w of workloads.reverse()) await w.close();
      await servers.close();
    },
  };
}
