import { z } from "zod";
import { VEHICLE_PARTS } from "../domain/closeups.ts";
import { DAMAGE_TYPES, SEVERITIES } from "../domain/grading.ts";
import { REVIEW_ACTIONS } from "../domain/review.ts";

/** The finding types a reviewer may give: damage a person can see and name. */
export const REVIEWER_TYPES = [...DAMAGE_TYPES, "broken_part"] as const;

/** Limits of one review: more than any report holds, few enough to check in one request. */
export const MAX_DECISIONS = 500;
export const MAX_ADDED = 100;
export const MAX_NOTE = 2000;

const Part = z.enum(VEHICLE_PARTS).nullable();

export const ReviewDecision = z
  .strictObject({
    finding: z.string().min(1).meta({ description: "The id of a finding of this inspection's report." }),
    action: z.enum(REVIEW_ACTIONS),
    type: z.enum(REVIEWER_TYPES).optional(),
    part: Part.optional(),
    severity: z.enum(SEVERITIES).optional(),
  })
  .superRefine((d, ctx) => {
    const changes = d.type !== undefined || d.part !== undefined || d.severity !== undefined;
    if (d.action === "change" && !changes)
      ctx.addIssue({ code: "custom", message: "a change names at least one of type, part and severity" });
    if (d.action !== "change" && changes)
      ctx.addIssue({ code: "custom", message: `only a change names type, part or severity; this is a ${d.action}` });
  });
export type ReviewDecision = z.infer<typeof ReviewDecision>;

/** x, y, width and height relative to the photo: a box of some size that lies within it. */
const Box = z
  .array(z.number().min(0).max(1))
  .length(4)
  .refine(
    ([x, y, w, h]) => w! > 0 && h! > 0 && x! + w! <= 1.000001 && y! + h! <= 1.000001,
    "the box must have a size and lie within the photo",
  )
  .meta({ description: "x, y, width, height, relative to the photo, each 0 to 1; the box lies within the photo." });

export const AddedFinding = z.strictObject({
  media_id: z.string().min(1).meta({ description: "A photo of this inspection's report." }),
  type: z.enum(REVIEWER_TYPES),
  part: Part.optional(),
  severity: z.enum(SEVERITIES),
  bbox: Box,
});
export type AddedFinding = z.infer<typeof AddedFinding>;

export const ReviewBody = z
  .strictObject({
    decisions: z.array(ReviewDecision).max(MAX_DECISIONS).optional(),
    added: z.array(AddedFinding).max(MAX_ADDED).optional(),
    note: z.string().max(MAX_NOTE).optional(),
  })
  .meta({ id: "ReviewRequest" });
export type ReviewBody = z.infer<typeof ReviewBody>;
