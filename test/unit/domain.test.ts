import { describe, expect, it } from "vitest";
import { nextAttemptAt, maxAttempts } from "../../core/domain/delivery-schedule.ts";
import { overallGrade } from "../../core/domain/grading.ts";
import {
  STATUSES,
  TRANSITIONS,
  TRIGGERS,
  captureLinkState,
  isCancelable,
  isTerminal,
  nextStatus,
} from "../../core/domain/state-machine.ts";
import { expectedCheckDigit, vinProblem } from "../../core/domain/vin.ts";
import { signWebhook } from "../../core/domain/webhook-signature.ts";
import { DEFAULT_RETRY_SCHEDULE_MS } from "../../core/runtime/config.ts";
import { isId, newApiKey, newId } from "../../core/domain/ids.ts";
import { Webhook } from "standardwebhooks";

describe("state machine", () => {
  it("has exactly the contract's moves", () => {
    expect(TRANSITIONS.map((t) => `${t.from} -${t.on}-> ${t.to}`)).toEqual([
      "created -capture_opened-> in_progress",
      "in_progress -capture_submitted-> processing",
      "processing -report_stored-> completed",
      "created -cancel_requested-> canceled",
      "in_progress -cancel_requested-> canceled",
      "processing -cancel_requested-> canceled",
      "created -link_expired-> expired",
      "in_progress -link_expired-> expired",
      "processing -processing_failed-> failed",
    ]);
  });

  it("never leaves a terminal state", () => {
    for (const status of STATUSES.filter(isTerminal)) {
      for (const trigger of TRIGGERS) expect(nextStatus(status, trigger)).toBeNull();
    }
    expect(STATUSES.filter(isTerminal)).toEqual(["completed", "canceled", "expired", "failed"]);
  });

  it("cancels only before completion", () => {
    expect(STATUSES.filter(isCancelable)).toEqual(["created", "in_progress", "processing"]);
  });

  it("tells what a capture link is: active, expired past expires_at, or the state that closed it", () => {
    expect(captureLinkState("created", 2000, 1000)).toBe("active");
    expect(captureLinkState("in_progress", 2000, 1000)).toBe("active");
    expect(captureLinkState("in_progress", 1000, 1000)).toBe("expired");
    expect(captureLinkState("processing", 2000, 1000)).toBe("processing");
    expect(captureLinkState("canceled", 500, 1000)).toBe("canceled");
  });

  it("cannot skip a step", () => {
    expect(nextStatus("created", "capture_submitted")).toBeNull();
    expect(nextStatus("in_progress", "report_stored")).toBeNull();
    expect(nextStatus("processing", "link_expired")).toBeNull();
  });
});

describe("VIN rules", () => {
  it.each([
    ["1HGCM82633A004352", null],
    ["11111111111111111", null],
    ["1M8GDM9AXKP042788", null],
    ["WVWZZZ1JZXW000001", null],
    ["1HGCM82643A004352", "check_digit"],
    ["1HGCM82633A00435", "length"],
    ["1HGCM82633A00435O", "alphabet"],
    ["1HGCM82633A00435Q", "alphabet"],
  ])("%s → %s", (vin, problem) => {
    expect(vinProblem(vin)).toBe(problem);
  });

  it("computes X for a remainder of 10", () => {
    expect(expectedCheckDigit("1M8GDM9AXKP042788")).toBe("X");
  });
});

describe("grading", () => {
  it.each([
    [[], "none"],
    [["minor"], "minor"],
    [["minor", "minor"], "minor"],
    [["minor", "minor", "minor"], "moderate"],
    [["minor", "moderate"], "moderate"],
    [["moderate", "moderate", "moderate", "minor"], "severe"],
    [["minor", "minor", "minor", "moderate"], "moderate"],
    [["severe", "severe", "severe"], "severe"],
  ] as const)("%j → %s", (severities, grade) => {
    expect(overallGrade(severities)).toBe(grade);
  });
});

describe("delivery schedule", () => {
  it("follows the contract: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then gives up (8 attempts)", () => {
    const mid = () => 0.5;
    const waits = [1, 2, 3, 4, 5, 6, 7].map((n) => nextAttemptAt(0, n, DEFAULT_RETRY_SCHEDULE_MS, mid));
    expect(waits).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(nextAttemptAt(0, 8, DEFAULT_RETRY_SCHEDULE_MS)).toBeNull();
    expect(maxAttempts(DEFAULT_RETRY_SCHEDULE_MS)).toBe(8);
  });

  it("jitters within ±10%", () => {
    expect(nextAttemptAt(1000, 1, [10_000], () => 0)).toBe(1000 + 9_000);
    expect(nextAttemptAt(1000, 1, [10_000], () => 1)).toBe(1000 + 11_000);
  });
});

describe("webhook signature", () => {
  it("is what the Standard Webhooks library verifies", () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ts = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ id: "evt_1", type: "inspection.completed" });
    const signature = signWebhook(secret, "evt_1", ts, body);
    expect(signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(
      new Webhook(secret).verify(body, { "webhook-id": "evt_1", "webhook-timestamp": String(ts), "webhook-signature": signature }),
    ).toEqual(JSON.parse(body));
    expect(() =>
      new Webhook(secret).verify(body, { "webhook-id": "evt_2", "webhook-timestamp": String(ts), "webhook-signature": signature }),
    ).toThrow();
  });
});

describe("ids and keys", () => {
  it("are prefixed, 24 lowercase characters, and distinct", () => {
    const ids = Array.from({ length: 1000 }, () => newId("insp"));
    for (const id of ids) expect(isId("insp", id)).toBe(true);
    expect(new Set(ids).size).toBe(1000);
    expect(isId("insp", "insp_ABC")).toBe(false);
    expect(newApiKey("live")).toMatch(/^sk_live_[a-z0-9]{40}$/);
  });
});
