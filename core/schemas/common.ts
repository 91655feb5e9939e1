import { z } from "zod";
import { ERROR_CODES, type ErrorCode, type ErrorType } from "../domain/errors.ts";

export const Timestamp = z
  .string()
  .meta({ description: "UTC, ISO 8601, whole seconds: YYYY-MM-DDTHH:MM:SSZ", example: "2026-11-21T10:00:00Z" });

const ERROR_TYPES = [...new Set(Object.values(ERROR_CODES).map((e) => e.type))] as [ErrorType, ...ErrorType[]];

export const ErrorBody = z
  .object({
    error: z.object({
      type: z.enum(ERROR_TYPES),
      code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      param: z.string().nullable(),
      request_id: z.string(),
    }),
  })
  .meta({ id: "Error" });

export function listOf<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({
      object: z.literal("list"),
      data: z.array(item),
      has_more: z.boolean(),
      next_cursor: z.string().nullable(),
    })
    .meta({ id });
}

/** The statuses every authenticated route can answer with besides its own. */
export const commonErrorResponses = {
  400: ErrorBody,
  401: ErrorBody,
  404: ErrorBody,
  429: ErrorBody,
  500: ErrorBody,
} as const;
