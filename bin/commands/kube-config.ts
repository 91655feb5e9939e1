import { KubeConfig, type RequestContext } from "@kubernetes/client-node";
import { countKubernetesRequest } from "../../core/runtime/metrics.ts";

let loaded: KubeConfig | undefined;

/** The undici of @kubernetes/client-node (its own, not this project's): its dispatcher and what wraps one. */
type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;
type Dispatch = Dispatcher["dispatch"];
type MakeDispatcher = (cluster: { name?: string; server?: string } | null, agentOptions: object) => Dispatcher | undefined;
/** What a connection is made with: a change in any of them makes a new pool. */
const POOL_OPTIONS = ["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername"] as const;

/**
 * Counts each request on `countKubernetesRequest` once, when its response starts (a watch: when
 * the server accepts it, not when it ends) or, where none comes, as `<error>`; all else is passed on.
 */
const countRequests =
  (dispatch: Dispatch): Dispatch =>
  (options, handler) => {
    const method = options.method.toUpperCase();
    const verb = method === "GET" && /[?&]watch=(true|1)(&|$)/.test(options.path) ? "WATCH" : method;
    let counted = false;
    const count = (code: string) => {
      if (counted) return;
      counted = true;
      countKubernetesRequest(verb, code);
    };
    return dispatch(options, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onRequestUpgrade: (controller, statusCode, headers, socket) => handler.onRequestUpgrade?.(controller, statusCode, headers, socket),
      onResponseStart: (controller, statusCode, headers, statusMessage) => {
        // An interim 1xx is not the answer.
        if (statusCode >= 200) count(String(statusCode));
        return handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
      },
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, error) => {
        count("<error>");
        return handler.onResponseError?.(controller, error);
      },
    });
  };

/**
 * A KubeConfig whose every request is counted on /metrics, as client-go's rest_client_requests_total
 * counts them. Every request of @kubernetes/client-node goes through applySecurityAuthentication
 * and then through the undici dispatcher it sets: the API clients of makeApiClient (and
 * KubernetesObjectApi) and Watch alike, so one hook here sees them all, and no client or call site
 * knows of it. (The middleware of makeApiClient's configuration would not do: its `post` sees the
 * response without the request's method, and Watch does not pass through it.) Exec, attach and
 * port-forward, over WebSockets, are not counted; this service uses none of them.
 */
export class CountedKubeConfig extends KubeConfig {
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const dispatcher = context.getDispatcher();
    // Never absent: createDispatcherOptions below always asks for one.
    if (dispatcher) context.setDispatcher(dispatcher.compose(countRequests));
  }

  /**
   * One connection pool for the process's life, where client-node 2.0.1 makes a new undici Agent
   * (a pool of its own) for every request: each call to the API server opened a connection, and
   * over TLS paid a handshake on both sides, the status writes and their 409 retries included. A
   * new pool is made only when what it connects with changes (a rotated client certificate or CA);
   * the old one is closed once its requests are done. Bearer tokens are headers, read per request.
   * `createDispatcher` is private in client-node's typings, so it is replaced on the instance.
   */
  constructor() {
    super();
    const self = this as unknown as { createDispatcher: MakeDispatcher };
    const make = self.createDispatcher.bind(this);
    let pool: { key: string; dispatcher: Dispatcher | undefined } | undefined;
    self.createDispatcher = (cluster, agentOptions) => {
      const o = agentOptions as Record<string, unknown>;
      const key = JSON.stringify([
        cluster?.name,
        cluster?.server,
        this.getCurrentUser()?.name,
        ...POOL_OPTIONS.map((k) => (o[k] === undefined ? null : String(o[k]))),
      ]);
      if (pool?.key !== key) {
        void pool?.dispatcher?.close().catch(() => {});
        pool = { key, dispatcher: make(cluster, agentOptions) };
      }
      return pool.dispatcher;
    };
  }

  /**
   * Where there are no TLS options (an https server with no CA, certificate or skipTLSVerify given),
   * client-node leaves the dispatcher to fetch's global one; an Agent all the same, so there is one to count on.
   */
  override createDispatcherOptions(
    ...args: Parameters<KubeConfig["createDispatcherOptions"]>
  ): ReturnType<KubeConfig["createDispatcherOptions"]> {
    const options = super.createDispatcherOptions(...args);
    return options.type === "none" ? { type: "agent", connect: { keepAlive: true, keepAliveInitialDelay: 30_000 } } : options;
  }
}

/**
 * The API server, found as every client finds it: in a pod from its service account, elsewhere
 * from KUBECONFIG or ~/.kube/config. Read once per process, for the lease, the Jobs and the
 * Inspection resources alike. The workloads import this and what uses @kubernetes/client-node only
 * when the config asks for them: loaded at start, the client made every process, the CLI's
 * commands included, take 0.25 s longer and 38 MB more memory (`vehicle-inspection --help`: 0.74 s
 * and 229 MB against 0.48 s and 191 MB).
 */
export function kubeConfig(): KubeConfig {
  if (!loaded) {
    loaded = new CountedKubeConfig();
    loaded.loadFromDefault();
  }
  return loaded;
}
