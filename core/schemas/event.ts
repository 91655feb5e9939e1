import { z } from "zod";
import { EVENT_TYPES } from "../domain/state-machine.ts";
import { Timestamp, listOf } from "./common.ts";
import { Inspection, listQuery } from "./inspection.ts";
import { AddedFinding, ReviewDecision } from "./review.ts";

/** What an `inspection.reviewed` event says of its review: who, when, and what they decided. */
export const EventReview = z.object({
  reviewed_by: z.string().meta({ description: "An API key's id (key_…) or a dashboard user's email." }),
  reviewed_at: Timestamp,
  note: z.string().nullable(),
  decisions: z.array(ReviewDecision),
  added: z.array(AddedFinding.extend({ id: z.string().meta({ description: "The id the added finding has in the report." }) })),
});

export const DELIVERY_STATUSES = ["pending", "succeeded", "failed", "none"] as const;

export const DeliveryAttempt = z.object({
  number: z.number().int().meta({ description: "1 for the first attempt; a resend's attempts go on from the last number." }),
  attempted_at: Timestamp,
  status_code: z.number().int().nullable(),
  latency_ms: z.number().int(),
  error: z.string().nullable(),
});

export const Event = z
  .object({
    id: z.string(),
    object: z.literal("event"),
    type: z.enum(EVENT_TYPES),
    created_at: Timestamp,
    livemode: z.boolean(),
    data: Inspection,
    review: EventReview.optional().meta({ description: "On inspection.reviewed only: the review this event records." }),
    delivery: z.object({
      status: z.enum(DELIVERY_STATUSES).meta({ description: "`none` when the inspection has no notify_url." }),
      next_attempt_at: Timestamp.nullable(),
      attempts: z.array(DeliveryAttempt),
    }),
  })
  .meta({ id: "Event" });
export type Event = z.infer<typeof Event>;

export const EventList = listOf(Event, "EventList");
export const EventListQuery = listQuery("evt");

/** The body of a webhook delivery: the event as it was made, without its delivery record. */
export const WebhookEvent = Event.omit({ delivery: true }).meta({ id: "WebhookEvent" });
