import pino, { type Logger, type LoggerOptions } from "pino";

/** Capture tokens are bearer secrets in a URL: logs keep only their first 6 characters. */
export function redactUrl(url: string): string {
  return url.replace(/^(\/(?:capture\/v1|c)\/)([A-Za-z0-9_-]{6})[A-Za-z0-9_-]+/, "$1$2…");
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: ["req.headers.authorization", "headers.authorization", "*.secret", "*.key"], censor: "[redacted]" },
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({ method: req.method, url: redactUrl(req.url), id: req.id }),
    },
  };
}

export function createLogger(level: string): Logger {
  return pino(loggerOptions(level));
}
