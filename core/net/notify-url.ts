import { ApiError } from "../domain/errors.ts";
import { privateByItself } from "./ssrf-guard.ts";

/**
 * The contract's rules for notify_url, as far as the URL itself shows them: https for live keys, no
 * credentials, and, unless the deployment allows private targets, no host that is private by itself
 * (an IP literal that is not public, localhost). A host name is not resolved here: it is resolved and
 * checked at every delivery (WebhookClient), so a name that does not resolve now is not refused for
 * that. `param`: the field being checked, for a URL that webhooks will reach by another name (a test
 * delivery's `url`).
 */
export function checkNotifyUrl(raw: string, livemode: boolean, allowPrivateTargets: boolean, param = "notify_url"): void {
  const url = new URL(raw);
  if (livemode && url.protocol !== "https:") {
    throw new ApiError("parameter_invalid", `${param} must use https with a live key.`, { param });
  }
  if (url.username || url.password) {
    throw new ApiError("parameter_invalid", `${param} must not carry credentials; verify deliveries by their signature instead.`, {
      param,
    });
  }
  if (allowPrivateTargets) return;
  const why = privateByItself(url.hostname);
  if (why) throw new ApiError("parameter_invalid", `${param} must reach a public address: ${why}.`, { param });
}
