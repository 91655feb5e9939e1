import { ApiError } from "../errors.ts";
import { ForbiddenTargetError, resolvePublicAddresses } from "./ssrf-guard.ts";

/**
 * The contract's rules for notify_url: https for live keys, and a public target unless the
 * deployment allows private ones. `param`: the field being checked, for a URL that webhooks will
 * reach by another name (a test delivery's `url`).
 */
export async function checkNotifyUrl(raw: string, livemode: boolean, allowPrivateTargets: boolean, param = "notify_url"): Promise<void> {
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
  try {
    await resolvePublicAddresses(url.hostname);
  } catch (error) {
    const why = error instanceof ForbiddenTargetError ? error.message : `${url.hostname} could not be resolved`;
    throw new ApiError("parameter_invalid", `${param} must reach a public address: ${why}.`, { param });
  }
}
