import { z } from "zod";
import { Timestamp } from "./common.ts";
import { Status, Vehicle } from "./inspection.ts";
import { Quality } from "./report.ts";

export const EXTERIOR_ANGLES = ["front", "front_left", "left", "rear_left", "rear", "rear_right", "right", "front_right"] as const;
export type ExteriorAngle = (typeof EXTERIOR_ANGLES)[number];
/** Whether a photo of this angle shows the outside of the vehicle: only those are searched for damage. */
export const isExterior = (angle: string): angle is ExteriorAngle => (EXTERIOR_ANGLES as readonly string[]).includes(angle);
export const ANGLES = [...EXTERIOR_ANGLES, "vin", "odometer"] as const;
export type Angle = (typeof ANGLES)[number];
export const REQUIRED_ANGLES: readonly Angle[] = [...EXTERIOR_ANGLES, "vin"];

export const PHOTO_CONTENT_TYPES = ["image/jpeg", "image/png", "image/webp", "image/heic"] as const;

export const CaptureSession = z.object({
  inspection_id: z.string(),
  status: Status,
  expires_at: Timestamp,
  vehicle: Vehicle,
  vin_confirmed: z.string().nullable(),
  steps: z.array(
    z.object({
      angle: z.enum(ANGLES),
      required: z.boolean(),
      done: z.boolean(),
      quality: Quality.nullable(),
    }),
  ),
});

export const TokenParams = z.strictObject({ token: z.string() });
export const PhotoParams = z.strictObject({ token: z.string(), angle: z.enum(ANGLES) });

export const PhotoResult = z.object({
  media_id: z.string(),
  angle: z.enum(ANGLES),
  width: z.number().int(),
  height: z.number().int(),
  quality: Quality,
});

export const VinBody = z.strictObject({ vin: z.string() });
export const VinResult = z.object({
  vin: z.string(),
  valid: z.boolean(),
  matches_vehicle: z.boolean(),
  make: z.string().nullable(),
  model: z.string().nullable(),
  year: z.number().int().nullable(),
});

export const SubmitResult = z.object({ status: z.literal("processing") });
