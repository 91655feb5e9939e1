import { Agent, request } from "undici";
import { guardedLookup, resolvePublicAddresses } from "./ssrf-guard.ts";

/** What one POST to a receiver came to: success is any 2xx, else `error` says why. */
export type PostOutcome = { statusCode: number | null; latencyMs: number; error: string | null };

export type WebhookClientOptions = { timeoutMs: number; allowPrivateTargets: boolean };

/**
 * The HTTP side of a webhook delivery, shared by the dispatcher's attempts and the API's test
 * deliveries, so both reach receivers under the same rules: the SSRF guard before the request and
 * again at connect time, one timeout for the whole exchange, redirects not followed.
 */
export class WebhookClient {
  readonly #o: WebhookClientOptions;
  readonly #agent: Agent;

  constructor(options: WebhookClientOptions) {
    this.#o = options;
    this.#agent = new Agent({
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connectTimeout: Math.min(options.timeoutMs, 10_000),
      // Checked at connect time as well as before the request, so DNS rebinding cannot slip through.
      connect: options.allowPrivateTargets ? {} : { lookup: guardedLookup as never },
    });
  }

  /** Never throws: a refused target, a connection failure or a timeout is the outcome's `error`. */
  async post(target: string, headers: Record<string, string>, body: string): Promise<PostOutcome> {
    let statusCode: number | null = null;
    let error: string | null = null;
    const t0 = performance.now();
    try {
      const url = new URL(target);
      if (!this.#o.allowPrivateTargets) await resolvePublicAddresses(url.hostname);
      const response = await request(url, {
        method: "POST",
        headers,
        body,
        dispatcher: this.#agent,
        signal: AbortSignal.timeout(this.#o.timeoutMs),
      });
      statusCode = response.statusCode;
      await response.body.dump({ limit: 64 * 1024 });
      if (statusCode < 200 || statusCode > 299)
        error =
          statusCode >= 300 && statusCode < 400 ? `redirect to ${response.headers.location ?? "?"} not followed` : `HTTP ${statusCode}`;
    } catch (e) {
      error = describe(e);
    }
    return { statusCode, latencyMs: Math.round(performance.now() - t0), error };
  }

  close(): Promise<void> {
    return this.#agent.close();
  }
}

function describe(e: unknown): string {
  const err = e as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err.name === "TimeoutError" || err.code === "UND_ERR_HEADERS_TIMEOUT" || err.code === "UND_ERR_BODY_TIMEOUT") return "timed out";
  const detail = err.cause?.message ?? err.message ?? String(e);
  return `${err.cause?.code ?? err.code ?? "error"}: ${detail}`;
}
