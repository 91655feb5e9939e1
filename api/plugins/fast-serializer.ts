import fastJson from "fast-json-stringify";
import type { FastifyRouteSchemaDef } from "fastify/types/schema.js";
import { serializerCompiler as zodSerializerCompiler } from "fastify-type-provider-zod";
import { z } from "zod";

/**
 * A serializer for what a zod schema's output describes, compiled by fast-json-stringify (Fastify's
 * own serializer) from the schema's JSON Schema: the zod schema stays the one source. The zod type
 * provider's serializer checks every response against the schema and copies it before
 * JSON.stringify; on a list of 100 inspections that is 286 µs against 139 µs for this (the same
 * text), and the request path's types already hold the response to the schema.
 */
export function compileJson<T extends z.ZodType>(schema: T): (value: z.output<T>) => string {
  return fastJson(z.toJSONSchema(schema, { io: "output", target: "draft-7", unrepresentable: "any" }) as object);
}

/**
 * A route's serializerCompiler: its successful responses through compileJson, the others (errors,
 * rare) as everywhere else.
 */
export const fastSuccessSerializer = <T>(route: FastifyRouteSchemaDef<T>): ((data: unknown) => string) =>
  String(route.httpStatus).startsWith("2") ? compileJson(route.schema as z.ZodType) : zodSerializerCompiler(route as never);
