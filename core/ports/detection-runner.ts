import type { DamageType } from "../domain/damage-types.ts";
import type { Severity } from "../domain/grading.ts";
import type { Quality } from "../schemas/report.ts";

/** What detection finds: the damage model's types, and the whole-photo judgement's two. */
export type DetectedType = DamageType | "damage_suspected" | "broken_part";

/**
 * A photo to inspect, with the quality measured when it was uploaded. A close-up (angle
 * `closeup`) carries the part the customer tied it to, if any: its findings are on that part.
 */
export type PhotoToInspect = { mediaId: string; angle: string; blobKey: string; quality: Quality; part?: string | null };

export type Detection = {
  mediaId: string;
  type: DetectedType;
  part: string | null;
  severity: Severity;
  confidence: number;
  /** Relative to the photo: x, y, width, height, each 0–1. */
  bbox: [number, number, number, number];
  /** Where on its part's box the damage's centre lies (0–1 across, down); null without a part box. Absent from older runners' results. */
  partPosition?: [number, number] | null;
  /** The evidence photo drawn for this detection, already stored as a blob; the controller records it as media. */
  evidence: { mediaId: string; blobKey: string; bytes: number; etag: string; width: number; height: number } | null;
};

/** `damageScore`: the whole-photo judgement (0-1) of an exterior photo or close-up; null where none ran. */
export type PhotoOutcome = { mediaId: string; readable: boolean; quality: Quality | null; damageScore?: number | null };

export type DetectionResult = {
  /** Null while no damage model is configured: the report then carries photo quality only. */
  model: { name: string; version: string } | null;
  photos: PhotoOutcome[];
  detections: Detection[];
};

/**
 * What `detect` rejects with when the runner is closed while it runs: it stopped at a safe point
 * because the process is stopping. The controller, stopped before the runner, has already
 * abandoned every run still going, so none of these counts as an attempt.
 */
export class DetectionInterrupted extends Error {
  constructor() {
    super("detection interrupted: the process is stopping");
    this.name = "DetectionInterrupted";
  }
}

/** `locale`: the language the evidence photos' labels are written in, the report's (capture.locale); English without one. */
export type DetectOptions = { locale?: string | null };

/**
 * Runs detection and grading over an inspection's photos. Embedded: worker threads in the process.
 * Cluster: a NATS JetStream work queue, consumed by `vehicle-inspection inference` processes.
 */
export interface DetectionRunner {
  /**
   * `attempt` numbers this try at the inspection (the controller passes its count of failed ones),
   * the same after a restart: a runner that queues the work elsewhere (NATS) knows from it that a
   * job it finds queued, or a result it finds stored, is this try's rather than an earlier one's.
   */
  detect(inspectionId: string, photos: PhotoToInspect[], attempt?: number, options?: DetectOptions): Promise<DetectionResult>;
  /** Rejects detection not started yet, and stops what runs at its next safe point (DetectionInterrupted). */
  close(): Promise<void>;
}
