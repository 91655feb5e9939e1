import type { InspectionRecord } from "../ports/records.ts";
import type { Services } from "../runtime/services.ts";

/** How long a request that recorded an intent waits for the controller to act on it before answering. */
const CONTROLLER_WAIT_MS = 5_000;

/**
 * The controller is the only writer of status: a request records an intent (opened, submit,
 * cancel), then calls this, which nudges the controller and waits up to CONTROLLER_WAIT_MS for the
 * inspection to be `moved`, re-reading the store (signals only shorten the wait, so split api and
 * operator processes behave the same). Answers the inspection as last read, moved or not: the intent
 * is durable, and the caller says what an unmoved one means.
 */
export async function awaitController(
  s: Pick<Services, "inspections" | "signals">,
  id: string,
  moved: (r: InspectionRecord) => boolean,
): Promise<InspectionRecord> {
  s.signals.nudgeController(id);
  return s.signals.waitFor(id, async () => (await s.inspections.getById(id))!, moved, CONTROLLER_WAIT_MS);
}
