import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.ts";

/**
 * The real servers integration tests run as plain processes on loopback, built from the Go module
 * proxy (no Docker engine on the build machines). The one place their versions are pinned.
 */
export const GO_SERVERS = {
  // ≥ 2.11: per-message TTL and KV limit markers (Debian's 2.9 has neither).
  "nats-server": { module: "github.com/nats-io/nats-server/v2", version: "v2.14.0" },
  // An S3 server over a directory: a bucket is a folder, an object a file under it.
  versitygw: { module: "github.com/versity/versitygw/cmd/versitygw", version: "v1.8.0" },
  // The Kubernetes control plane (test/helpers/kube-control-plane.ts). Their modules have replace
  // directives, so `go install module@version` refuses them: each is built inside a wrapper module
  // of ours (test/kube/), whose go.mod pins the version named here.
  etcd: { wrapper: "test/kube/etcd", package: ".", version: "v3.6.13" },
  "kube-apiserver": { wrapper: "test/kube/binaries", package: "k8s.io/kubernetes/cmd/kube-apiserver", version: "v1.34.2" },
  // For Jobs' pods: the Job, TTL-after-finished and garbage-collector controllers, and the scheduler,
  // which places pods on the nodes kwok simulates (GPU capacity, taints), moving them through their
  // phases without kubelets.
  "kube-controller-manager": {
    wrapper: "test/kube/binaries",
    package: "k8s.io/kubernetes/cmd/kube-controller-manager",
    version: "v1.34.2",
  },
  "kube-scheduler": { wrapper: "test/kube/binaries", package: "k8s.io/kubernetes/cmd/kube-scheduler", version: "v1.34.2" },
  kwok: { module: "sigs.k8s.io/kwok/cmd/kwok", version: "v0.8.0" },
} as const satisfies Record<string, GoBuild>;
export type GoServer = keyof typeof GO_SERVERS;
/** Built by `go install module@version`, or by `go build` of a package inside a wrapper module of the repository. */
type GoBuild = { module: string; version: string } | { wrapper: string; package: string; version: string };

const REPOSITORY = join(import.meta.dirname, "../..");

/** Outside the repository, by version, so a new pin builds beside the old one and nothing is rebuilt twice. */
const CACHE_DIR = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "vehicle-inspection", "go");
export const goBinary = (name: GoServer): string => join(CACHE_DIR, `${name}-${GO_SERVERS[name].version}`, name);

/** The servers not built yet. */
export const missingGoServers = (): GoServer[] => (Object.keys(GO_SERVERS) as GoServer[]).filter((name) => !existsSync(goBinary(name)));

/** `go` on PATH, else where the official tarball installs it (the build machines' /usr/local/go); null without Go. */
export function goCommand(): string | null {
  for (const go of ["go", "/usr/local/go/bin/go"]) {
    try {
      execFileSync(go, ["version"], { stdio: "ignore" });
      return go;
    } catch {}
  }
  return null;
}

/**
 * Builds each pinned server that is not in the cache yet (`go install module@version`), one at a
 * time (the machines have two cores). Each build installs into a folder of its own that is renamed
 * into place whole, so an interrupted build leaves nothing under the final name and two test runs
 * building at once never see a half-written binary. Returns at once when all are there.
 */
export async function buildGoServers(log: (line: string) => void = () => {}): Promise<void> {
  for (const name of missingGoServers()) {
    const go = goCommand();
    if (!go) throw new Error(`Go (https://go.dev/dl/) is needed to build ${name} for the tests, and is not installed`);
    const build: GoBuild = GO_SERVERS[name];
    const { version } = build;
    const binary = goBinary(name);
    log(`building ${name} ${version} from the Go module proxy (once; cached in ${CACHE_DIR})`);
    const since = Date.now();
    mkdirSync(CACHE_DIR, { recursive: true });
    const staging = mkdtempSync(join(CACHE_DIR, `.${name}-`));
    try {
      const run = promisify(execFile);
      if ("module" in build) {
        await run(go, ["install", `${build.module}@${version}`], { env: { ...process.env, GOBIN: staging }, maxBuffer: 16 << 20 });
      } else {
        // Static, as the control plane's own release builds are; a link takes about 2 GiB of memory.
        const env = { ...process.env, CGO_ENABLED: "0" };
        await run(go, ["build", "-o", join(staging, name), build.package], {
          cwd: join(REPOSITORY, build.wrapper),
          env,
          maxBuffer: 16 << 20,
        });
      }
      chmodSync(staging, 0o755);
      if (!existsSync(binary)) renameSync(staging, dirname(binary));
    } catch (error) {
      // Another run may have renamed its build into place first: that one is as good.
      if (!existsSync(binary)) throw error;
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
    log(`built ${name} ${version} in ${Math.round((Date.now() - since) / 1000)} s`);
  }
}

const STARTUP_TIMEOUT_MS = 20_000;
const running = new Set<ChildProcess>();
// A test file that fails before its clean-up must not leave servers behind it.
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

/**
 * A server process that can be stopped and started again with the same arguments: the same port
 * and the same data directory, as a real outage and recovery would look to its clients.
 */
export class ServerProcess {
  readonly #name: GoServer;
  readonly #args: string[];
  readonly #port: number;
  #child: ChildProcess | null = null;
  #output = "";

  /** The last few thousand characters it printed, for saying why it did not come up. */
  get output(): string {
    return this.#output;
  }

  /** Whether its process is up (started and not exited). */
  get running(): boolean {
    return this.#child !== null;
  }

  constructor(name: GoServer, args: string[], port: number) {
    this.#name = name;
    this.#args = args;
    this.#port = port;
  }

  async start(): Promise<void> {
    if (this.#child) return;
    await buildGoServers();
    this.#output = "";
    const child = spawn(goBinary(this.#name), this.#args, { stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk: Buffer) => {
      this.#output = (this.#output + chunk.toString()).slice(-6000);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    running.add(child);
    child.once("exit", () => {
      running.delete(child);
      if (this.#child === child) this.#child = null;
    });
    this.#child = child;
    const deadline = Date.now() + STARTUP_TIMEOUT_MS;
    while (!(await accepts(this.#port))) {
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`${this.#name} did not start on port ${this.#port}:\n${this.#output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops the server and waits until it has exited, so its port refuses connections. */
  async stop(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(killer);
  }
}

export type GoServerHandle = {
  /** Stops the process; its data directory stays. */
  stop(): Promise<void>;
  /** Starts it again on the same port over the same data directory. */
  start(): Promise<void>;
  /** Stops it for good and removes its data directory. */
  close(): Promise<void>;
};

/** Starts the server, and hands it back with its data directory to remove on close. */
async function started(server: ServerProcess, dataDir: string): Promise<GoServerHandle> {
  await server.start();
  return {
    start: () => server.start(),
    stop: () => server.stop(),
    close: async () => {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export type VersityGw = GoServerHandle & {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  /** The bucket's directory: its objects are the files under it, at their keys' paths. */
  bucketDir: string;
  /** The environment that points the service (and the AWS SDK's credential chain) at this server's bucket. */
  clientEnv: Record<string, string>;
};

/** versitygw (an S3 server, posix backend) on a free loopback port, with one empty bucket. */
export async function startVersityGw(bucket = "inspections"): Promise<VersityGw> {
  const root = mkdtempSync(join(tmpdir(), "vi-s3-"));
  const bucketDir = join(root, bucket);
  mkdirSync(bucketDir);
  const port = await freePort();
  const accessKey = "vi-test-access";
  const secretKey = "vi-test-secret-key";
  const args = ["--access", accessKey, "--secret", secretKey, "--port", `127.0.0.1:${port}`, "--quiet", "posix", root];
  const handle = await started(new ServerProcess("versitygw", args, port), root);
  const endpoint = `http://127.0.0.1:${port}`;
  const clientEnv = {
    S3_BUCKET: bucket,
    S3_ENDPOINT: endpoint,
    S3_FORCE_PATH_STYLE: "true",
    AWS_ACCESS_KEY_ID: accessKey,
    AWS_SECRET_ACCESS_KEY: secretKey,
  };
  return { ...handle, endpoint, accessKey, secretKey, bucket, bucketDir, clientEnv };
}

export type NatsServer = GoServerHandle & { url: string; port: number };

/** nats-server with JetStream on loopback, its store in a directory of its own; on `port`, or a free one (a test may start it after its clients). */
export async function startNatsServer(port?: number): Promise<NatsServer> {
  const storeDir = mkdtempSync(join(tmpdir(), "vi-nats-"));
  port ??= await freePort();
  const args = ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir];
  const handle = await started(new ServerProcess("nats-server", args, port), storeDir);
  return { ...handle, url: `nats://127.0.0.1:${port}`, port };
}
