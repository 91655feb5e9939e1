import { ApiError } from "../../core/errors.ts";
import { ForbiddenTargetError, resolvePublicAddresses } from "../../core/net/ssrf-guard.ts";

/** The contract's rules for notify_url: https for live keys, and a public target unless the deployment allows private ones. */
export async function checkNotifyUrl(raw: string, livemode: boolean, allowPrivateTargets: boolean): Promise<void> {
  const url = new URL(raw);
  if (livemode && url.protocol !== "https:") {
    throw new ApiError("parameter_invalid", "notify_url must use https with a live key.", { param: "notify_url" });
  }
  if (url.username || url.password) {
    throw new ApiError("parameter_invalid", "notify_url must not carry credentials; verify deliveries by their signature instead.", {
      param: "notify_url",
    });
  }
  if (allowPrivateTargets) return;
  try {
    await resolvePublicAddresses(url.hostname);
  } catch (error) {
    const why = error instanceof ForbiddenTargetError ? error.message : `${url.hostname} could not be resolved`;
    throw new ApiError("parameter_invalid", `notify_url must reach a public address: ${why}.`, { param: "notify_url" });
  }
}
