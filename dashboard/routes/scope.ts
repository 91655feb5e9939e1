import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { Scope } from "../../core/ports/records.ts";

/** The environment in every signed-in path: /dashboard/test/… or /dashboard/live/…. */
export const EnvParams = z.object({ env: z.enum(["test", "live"]) });
/** What a signed-in page may show: the user's account, in the environment of its path. */
export const scopeOf = (request: FastifyRequest): Scope => ({
  accountId: request.user.accountId,
  livemode: (request.params as { env: string }).env === "live",
});
