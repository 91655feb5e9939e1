import { z } from "zod";
import { CLOSEUP, CLOSEUP_REASONS, MAX_CLOSEUPS, VEHICLE_PARTS } from "../domain/closeups.ts";
import { Timestamp } from "./common.ts";
import { queryInteger, Status, Vehicle, Vin } from "./inspection.ts";
import { Quality } from "./report.ts";

export const EXTERIOR_ANGLES = ["front", "front_left", "left", "rear_left", "rear", "rear_right", "right", "front_right"] as const;
export type ExteriorAngle = (typeof EXTERIOR_ANGLES)[number];
/** Whether a photo of this angle shows the outside of the vehicle as a whole: only those are checked for their angle and judged on upload. */
export const isExterior = (angle: string): angle is ExteriorAngle => (EXTERIOR_ANGLES as readonly string[]).includes(angle);
/** Whether a photo of this angle is searched for damage: the exterior photos and the close-ups; only those get model inputs. */
export const isSearched = (angle: string): boolean => isExterior(angle) || angle === CLOSEUP;
export const ANGLES = [...EXTERIOR_ANGLES, "vin", "odometer"] as const;
export type Angle = (typeof ANGLES)[number];
export const REQUIRED_ANGLES: readonly Angle[] = [...EXTERIOR_ANGLES, "vin"];

export const PHOTO_CONTENT_TYPES = ["image/jpeg", "image/png", "image/webp", "image/heic"] as const;

export const VehiclePart = z.enum(VEHICLE_PARTS).meta({ description: "A part of the vehicle, as the parts model and reports name it." });

export const SuggestedCloseup = z.object({
  part: VehiclePart,
  reason: z.enum(CLOSEUP_REASONS).meta({ description: "damage_suspected: the photo as a whole looks damaged there." }),
});
export type SuggestedCloseup = z.infer<typeof SuggestedCloseup>;

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
  closeups: z
    .array(z.object({ n: z.number().int(), part: VehiclePart.nullable(), media_id: z.string(), quality: Quality }))
    .meta({ description: "The close-ups taken so far, by slot n (1 to 8). Optional: they never block submit." }),
});

export const TokenParams = z.strictObject({ token: z.string() });
export const PhotoParams = z.strictObject({ token: z.string(), angle: z.enum(ANGLES) });

export const CloseupParams = z.strictObject({
  token: z.string(),
  n: queryInteger(1, MAX_CLOSEUPS).meta({
    description: `The close-up's slot, 1 to ${MAX_CLOSEUPS}: a second upload to a slot replaces it.`,
  }),
});
export const CloseupQuery = z.strictObject({
  part: VehiclePart.optional().meta({ description: "The part the close-up shows." }),
});

export const PhotoResult = z.object({
  media_id: z.string(),
  angle: z.enum([...ANGLES, CLOSEUP]),
  width: z.number().int(),
  height: z.number().int(),
  quality: Quality,
  part: VehiclePart.nullable().meta({ description: "A close-up's part; null for the other photos." }),
  suggested_closeups: z.array(SuggestedCloseup).meta({
    description:
      "After an exterior photo: the parts where the service suspects damage it cannot judge from afar, strongest first, so the page can ask for a close-up of each. Empty otherwise.",
  }),
});

export const VinBody = z.strictObject({ vin: Vin });
export const VinResult = z.object({
  vin: z.string(),
  valid: z.boolean(),
  matches_vehicle: z.boolean(),
  make: z.string().nullable(),
  model: z.string().nullable(),
  year: z.number().int().nullable(),
});

export const SubmitResult = z.object({ status: z.literal("processing") });
