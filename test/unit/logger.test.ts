import { describe, expect, it } from "vitest";
import { redactUrl } from "../../core/runtime/logger.ts";

describe("redactUrl", () => {
  const token = "VJ9bDnc_rX8t3BIscXVz6Wqk39xhWQZIi6jcqG5gx84";
  it.each([
    [`/c/${token}`, "/c/VJ9bDn…"],
    [`/capture/v1/${token}`, "/capture/v1/VJ9bDn…"],
    [`/capture/v1/${token}/photos/front`, "/capture/v1/VJ9bDn…/photos/front"],
    ["/v1/inspections/insp_abc", "/v1/inspections/insp_abc"],
  ])("%s → %s", (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
    expect(redactUrl(url)).not.toContain(token);
  });
});
