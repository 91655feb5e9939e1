import { z } from "zod";
import { DAMAGE_TYPES } from "../domain/damage-types.ts";
import { SEVERITIES } from "../domain/grading.ts";
import { Timestamp } from "./common.ts";
import { Grade, Summary } from "./inspection.ts";

export const FINDING_TYPES = [...DAMAGE_TYPES, "broken_part", "damage_suspected", "vin_mismatch"] as const;

/** Who placed a finding: the models, or a person reviewing the report. */
export const FINDING_SOURCES = ["model", "reviewer"] as const;
/** What a review decided of a model's finding. */
export const FINDING_REVIEWS = ["confirmed", "rejected", "changed"] as const;

/** Why a person should look at a report before acting on its grade (`review.reasons`). */
export const REVIEW_REASONS = [
  "damage_suspected",
  "low_confidence",
  "photo_problems_kept",
  "vin_unconfirmed",
  "vehicle_inconsistent",
  "photos_reused",
  "policy",
] as const;
export type ReviewReason = (typeof REVIEW_REASONS)[number];
export const REVIEW_STATUSES = ["not_required", "required", "completed"] as const;

export const Review = z.object({
  status: z.enum(REVIEW_STATUSES),
  reasons: z.array(z.enum(REVIEW_REASONS)).meta({ description: "Why the report went to a person; kept once the review is completed." }),
  reviewed_at: Timestamp.nullable(),
  reviewed_by: z
    .string()
    .nullable()
    .meta({ description: "Who completed the review: an API key's id (key_…) or a dashboard user's email." }),
  note: z.string().nullable().meta({ description: "The reviewer's note, if any." }),
});
export type Review = z.infer<typeof Review>;

/** The problems measured on upload, which the capture API answers and the page has words for. */
export const UPLOAD_QUALITY_PROBLEMS = ["too_dark", "too_bright", "blurry", "glare", "wrong_angle"] as const;
export type UploadQualityProblem = (typeof UPLOAD_QUALITY_PROBLEMS)[number];
/** With those found during processing, which leave the photo out of detection. */
export const QUALITY_PROBLEMS = [...UPLOAD_QUALITY_PROBLEMS, "too_small", "unreadable", "no_vehicle"] as const;
export type QualityProblem = (typeof QUALITY_PROBLEMS)[number];

export const Quality = z.object({
  brightness: z.number().meta({ description: "Mean luminance, 0 (black) to 1 (white)." }),
  sharpness: z.number().meta({ description: "Variance of the Laplacian of the photo downscaled to 512 px on its long side." }),
  glare: z.number().meta({
    description:
      "Share of the central half of the frame that is blown out: clipped (luminance 254 of 255 or more) and not joined to the frame's edge by clipped pixels, as a white sky or backdrop is.",
  }),
  passed: z.boolean(),
  problems: z.array(z.enum(QUALITY_PROBLEMS)).meta({
    description:
      "too_dark, too_bright, blurry, glare: measured on upload; wrong_angle: on upload, the photo shows another side of the vehicle than its angle (judged from the parts it shows). too_small, unreadable, no_vehicle: found during processing, where the photo is then left out of detection.",
  }),
});
export type Quality = z.infer<typeof Quality>;
/** A photo's quality as measured on upload (quality-of-grey.ts, the angle check), before processing's problems can join. */
export type UploadQuality = Omit<Quality, "problems"> & { problems: UploadQualityProblem[] };

export const ReportPhoto = z.object({
  media_id: z.string(),
  angle: z.string(),
  url: z.string(),
  width: z.number().int(),
  height: z.number().int(),
  captured_at: Timestamp,
  quality: Quality,
  part: z.string().nullable().meta({ description: "A close-up's part (angle closeup); null for the other photos." }),
  damage_score: z.number().min(0).max(1).nullable().meta({
    description:
      "How sure the service is, from the whole photo, that it shows damage; null where the photo was not judged (not exterior, unreadable, no vehicle, or no judgement model).",
  }),
});

export const Finding = z.object({
  id: z.string(),
  object: z.literal("finding"),
  type: z.enum(FINDING_TYPES),
  part: z.string().nullable(),
  severity: z.enum(SEVERITIES),
  confidence: z.number().nullable(),
  media_id: z.string().nullable(),
  // An array of exactly four rather than a tuple: schemathesis cannot read a tuple's prefixItems.
  bbox: z
    .array(z.number().min(0).max(1))
    .length(4)
    .nullable()
    .meta({ description: "x, y, width, height, relative to the photo, each 0 to 1." }),
  part_position: z.array(z.number().min(0).max(1)).length(2).nullable().meta({
    description:
      "Where on its part the damage lies: its centre, 0 to 1 across and down the part as the parts model found it in the photo. Null where no part was found for it, on a close-up, and in reports made before it existed. What a before/after comparison pairs damages by.",
  }),
  evidence_url: z.string().nullable(),
  source: z.enum(FINDING_SOURCES),
  review: z.enum(FINDING_REVIEWS).nullable().meta({
    description:
      "What the review decided of a model's finding; null before a review, for a finding the review left as it was, and for a reviewer's own. A rejected finding stays listed and leaves the grade.",
  }),
});
export type Finding = z.infer<typeof Finding>;

const Pairing = z.object({
  finding: z.string().meta({ description: "A finding of this report." }),
  baseline_finding: z.string().meta({ description: "The baseline report's finding it is the same damage as." }),
});

export const Comparison = z
  .object({
    baseline_inspection: z.string(),
    new: z.array(z.string()).meta({
      description: "Findings of this report that the baseline did not have, those worse now included; a reviewer's added findings are new.",
    }),
    worsened: z
      .array(Pairing)
      .meta({ description: "The new findings that were at the baseline, less severe: each with its baseline finding." }),
    preexisting: z.array(Pairing).meta({ description: "Findings that were there at the baseline, as bad or worse then." }),
    not_seen: z
      .array(z.string())
      .meta({ description: "The baseline's findings no finding of this report matched (repaired, or not in view)." }),
  })
  .meta({
    id: "Comparison",
    description:
      "This inspection against its baseline_inspection. Findings pair by part, type and place on the part (part_position), never by pixel position in the frame; rejected findings take no part.",
  });
export type Comparison = z.infer<typeof Comparison>;

export const REUSE_REASONS = ["sent_before", "taken_before_link"] as const;

export const Integrity = z
  .object({
    same_vehicle: z.enum(["consistent", "inconsistent", "unknown"]).meta({
      description:
        "Whether every exterior photo (and the baseline's) shows one vehicle, told by the colour of its painted panels (doors, hood, trunk, tailgate) as the parts model finds them on upload: two vehicles of one colour pass as one. inconsistent: a reason for review (vehicle_inconsistent). unknown: fewer than two photos whose paint could be read.",
    }),
    inconsistent_photos: z.array(z.string()).meta({
      description:
        "This inspection's photos that show another vehicle than the rest (than the baseline's photos, where it has a baseline).",
    }),
    reused_photos: z
      .array(
        z.object({
          media_id: z.string(),
          inspection: z
            .string()
            .nullable()
            .meta({ description: "The inspection of the account the picture was sent in first; null for taken_before_link." }),
          reason: z.enum(REUSE_REASONS).meta({
            description:
              "sent_before: the same picture (resized, re-encoded, cropped by a few percent or mirrored) was sent in another inspection of the account. taken_before_link: the camera's time (EXIF) is more than 14 hours (any time zone) before the capture link was made.",
          }),
          taken_at: Timestamp.nullable().meta({
            description: "When the camera says the photo was taken (EXIF, read as UTC); null when it does not say.",
          }),
        }),
      )
      .meta({ description: "Photos of this inspection that are not new: a reason for review (photos_reused)." }),
  })
  .meta({ id: "Integrity" });
export type Integrity = z.infer<typeof Integrity>;

export const Report = z
  .object({
    object: z.literal("report"),
    inspection_id: z.string(),
    livemode: z.boolean(),
    created_at: Timestamp,
    grade: Grade,
    summary: Summary,
    vehicle: z.object({
      vin: z.string(),
      vin_confirmed: z.boolean(),
      vin_observed: z.string().nullable(),
      make: z.string().nullable(),
      model: z.string().nullable(),
      year: z.number().int().nullable(),
    }),
    photos: z.array(ReportPhoto),
    findings: z.array(Finding),
    review: Review,
    comparison: Comparison.nullable().meta({ description: "Null unless the inspection was created with a baseline_inspection." }),
    integrity: Integrity,
    model: z.object({ name: z.string(), version: z.string() }).nullable(),
  })
  .meta({ id: "Report" });
export type Report = z.infer<typeof Report>;
