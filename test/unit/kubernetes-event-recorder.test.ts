import type { EventsV1Api } from "@kubernetes/client-node";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { KubernetesEventRecorder } from "../../core/adapters/kubernetes/kubernetes-event-recorder.ts";
import type { InspectionRecord } from "../../core/ports/records.ts";

/** A recorder whose Events land in `written`, the Inspection `insp_seen` in its cache and `insp_unseen` not. */
function recorder() {
  const written: { regarding: Record<string, string> }[] = [];
  const api = {
    createNamespacedEvent: async ({ body }: { body: { regarding: Record<string, string> } }) => {
      written.push(body);
      return body;
    },
  } as unknown as EventsV1Api;
  const cache: Record<string, { uid: string; resourceVersion: string }> = { insp_seen: { uid: "0b5e-uid", resourceVersion: "42" } };
  const events = new KubernetesEventRecorder(api, "vi", pino({ level: "silent" }), (id) => cache[id]);
  return { events, written };
}

const record = (id: string) => ({ id, status: "processing" }) as InspectionRecord;

describe("KubernetesEventRecorder", () => {
  it("names the Inspection's uid and resourceVersion, which kubectl describe finds Events by", () => {
    const { events, written } = recorder();
    events.moved(record("insp_seen"), "in_progress");
    expect(written[0]!.regarding).toEqual({
      apiVersion: "inspection.dev/v1",
      kind: "Inspection",
      name: "insp-seen",
      namespace: "vi",
      uid: "0b5e-uid",
      resourceVersion: "42",
    });
  });

  it("writes the Event without them for an Inspection its cache has not seen", () => {
    const { events, written } = recorder();
    events.detectionFailed(record("insp_unseen"), 1, new Error("no model"));
    expect(written[0]!.regarding).toEqual({ apiVersion: "inspection.dev/v1", kind: "Inspection", name: "insp-unseen", namespace: "vi" });
  });
});
