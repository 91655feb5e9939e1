/**
 * The contract's error table, as data. An ApiError carries a code; its HTTP status and type
 * follow from the code, and the body is shaped once, at the edge (api/plugins/error-handler.ts).
 */
export const ERROR_CODES = {
  parameter_missing: { status: 400, type: "invalid_request_error" },
  request_malformed: { status: 400, type: "invalid_request_error" },
  parameter_invalid: { status: 400, type: "invalid_request_error" },
  parameter_unknown: { status: 400, type: "invalid_request_error" },
  body_invalid_json: { status: 400, type: "invalid_request_error" },
  api_key_missing: { status: 401, type: "authentication_error" },
  api_key_invalid: { status: 401, type: "authentication_error" },
  resource_missing: { status: 404, type: "not_found_error" },
  method_not_allowed: { status: 405, type: "invalid_request_error" },
  request_timeout: { status: 408, type: "invalid_request_error" },
  inspection_not_cancelable: { status: 409, type: "conflict_error" },
  report_not_ready: { status: 409, type: "conflict_error" },
  report_unavailable: { status: 409, type: "conflict_error" },
  inspection_not_reviewable: { status: 409, type: "conflict_error" },
  idempotency_key_in_use: { status: 409, type: "conflict_error" },
  capture_incomplete: { status: 409, type: "conflict_error" },
  angle_not_requested: { status: 409, type: "conflict_error" },
  closeups_off: { status: 409, type: "conflict_error" },
  event_not_deliverable: { status: 409, type: "conflict_error" },
  capture_link_inactive: { status: 410, type: "invalid_request_error" },
  body_too_large: { status: 413, type: "invalid_request_error" },
  unsupported_media_type: { status: 415, type: "invalid_request_error" },
  expectation_failed: { status: 417, type: "invalid_request_error" },
  idempotency_key_reused: { status: 422, type: "idempotency_error" },
  rate_limited: { status: 429, type: "rate_limit_error" },
  request_headers_too_large: { status: 431, type: "invalid_request_error" },
  internal_error: { status: 500, type: "api_error" },
  service_unavailable: { status: 503, type: "api_error" },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
export type ErrorType = (typeof ERROR_CODES)[ErrorCode]["type"];

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly param: string | null;
  readonly statusCode: number;
  readonly type: ErrorType;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { param?: string | null; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.param = options.param ?? null;
    this.statusCode = ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.headers = options.headers ?? {};
  }
}

export function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}

export const notFound = (what: string, id: string, param: string | null = "id") =>
  new ApiError("resource_missing", `No such ${what}: '${id}'.`, { param });

/**
 * A store the service depends on (S3, in cluster mode) cannot be reached: 503, so clients retry.
 * Adapters throw it for their driver's network failures and 5xx answers, keeping the driver's
 * error as the cause, which the edge logs (api/plugins/error-handler.ts).
 */
export const storeUnavailable = (what: string, cause: unknown) =>
  new ApiError("service_unavailable", `${what} is unreachable at the moment; retry shortly.`, { cause });
