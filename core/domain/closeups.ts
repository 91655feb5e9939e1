/**
 * Close-ups of damage the customer adds after the walkaround (contract, "Added on 2026-11-26").
 * Zod-free, so the capture page bundles it as it does vin.ts.
 */

/**
 * The parts a close-up can be tied to: the parts model's classes (inference/models/parts), the names
 * reports give findings. Left and right are the car's own, as the parts model's labels are.
 */
export const VEHICLE_PARTS = [
  "back_bumper",
  "back_glass",
  "back_left_door",
  "back_left_light",
  "back_right_door",
  "back_right_light",
  "front_bumper",
  "front_glass",
  "front_left_door",
  "front_left_light",
  "front_right_door",
  "front_right_light",
  "hood",
  "left_mirror",
  "right_mirror",
  "tailgate",
  "trunk",
  "wheel",
] as const;
export type VehiclePart = (typeof VEHICLE_PARTS)[number];
export const isVehiclePart = (name: string): name is VehiclePart => (VEHICLE_PARTS as readonly string[]).includes(name);

/** The angle a close-up is stored and reported under. */
export const CLOSEUP = "closeup";
/** Close-ups an inspection can have: slots 1 to this. */
export const MAX_CLOSEUPS = 8;
/** Why a close-up is asked for after an exterior photo. */
export const CLOSEUP_REASONS = ["damage_suspected"] as const;
