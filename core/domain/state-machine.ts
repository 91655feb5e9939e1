/**
 * The inspection state machine: one table that every component asks. Only the controller
 * (operator/) applies moves; the API and capture routes record intents that become triggers.
 */
export const STATUSES = ["created", "in_progress", "processing", "completed", "canceled", "expired", "failed"] as const;
export type Status = (typeof STATUSES)[number];

export const TRIGGERS = [
  "capture_opened",
  "capture_submitted",
  "report_stored",
  "cancel_requested",
  "link_expired",
  "processing_failed",
] as const;
export type Trigger = (typeof TRIGGERS)[number];

export const TRANSITIONS: ReadonlyArray<{ from: Status; on: Trigger; to: Status }> = [
  { from: "created", on: "capture_opened", to: "in_progress" },
  { from: "in_progress", on: "capture_submitted", to: "processing" },
  { from: "processing", on: "report_stored", to: "completed" },
  { from: "created", on: "cancel_requested", to: "canceled" },
  { from: "in_progress", on: "cancel_requested", to: "canceled" },
  { from: "processing", on: "cancel_requested", to: "canceled" },
  { from: "created", on: "link_expired", to: "expired" },
  { from: "in_progress", on: "link_expired", to: "expired" },
  { from: "processing", on: "processing_failed", to: "failed" },
];

export const TERMINAL_STATUSES: ReadonlySet<Status> = new Set(["completed", "canceled", "expired", "failed"]);

/** The status a trigger moves `from` to, or null where the table has no such move. */
export function nextStatus(from: Status, on: Trigger): Status | null {
  return TRANSITIONS.find((t) => t.from === from && t.on === on)?.to ?? null;
}

export const isTerminal = (status: Status): boolean => TERMINAL_STATUSES.has(status);
export const isCancelable = (status: Status): boolean => nextStatus(status, "cancel_requested") !== null;
/** The capture link works only while the customer can still move the inspection forward. */
export const isCaptureOpen = (status: Status): boolean => status === "created" || status === "in_progress";

/**
 * What a capture link is now: "active", or the state that closed it. An open inspection past
 * expires_at reads as "expired" even before the controller's sweep has moved it.
 */
export function captureLinkState(status: Status, expiresAt: number, now: number): "active" | Exclude<Status, "created" | "in_progress"> {
  if (!isCaptureOpen(status)) return status as Exclude<Status, "created" | "in_progress">;
  return expiresAt <= now ? "expired" : "active";
}

/** Sent with `inspection.completed` when the report asks for a person's review (summary.needs_review). */
export const REVIEW_REQUIRED = "inspection.review_required";
/** Sent for every review of a completed inspection, with the reviewed summary and who reviewed. */
export const REVIEWED = "inspection.reviewed";

export type EventType = `inspection.${Status}` | typeof REVIEW_REQUIRED | typeof REVIEWED;
/** Each move's event, then the review's, which are not moves: the state machine's table has no row for them. */
export const EVENT_TYPES: EventType[] = [...STATUSES.map((s) => `inspection.${s}` as const), REVIEW_REQUIRED, REVIEWED];
export const eventTypeFor = (status: Status): EventType => `inspection.${status}`;
