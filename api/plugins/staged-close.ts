import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";

/** How long a connection answered before its request's body was whole keeps reading that body. */
export const LINGER_MS = 5_000;

/** Whether the request declares a body that has not all arrived yet. */
export function bodyStillArriving(request: IncomingMessage): boolean {
  if (request.complete) return false;
  return request.headers["transfer-encoding"] !== undefined || Number(request.headers["content-length"] ?? 0) > 0;
}

/**
 * The close of a connection whose response went out before its request's body was whole (a photo
 * refused from its first bytes, a body over the limit), in the stages RFC 9112 §9.6 asks for. Node
 * closes a `Connection: close` response's socket as soon as the response is written; the bytes the
 * client is still sending then meet a closed socket, and the TCP reset that answers them can discard
 * the response before the client has read it. Instead: the response, then the half-close (FIN), the
 * rest of the body read and dropped until the client closes its side, or for LINGER_MS at most.
 * The caller sends `Connection: close`, so the client knows to stop sending.
 */
export function closeInStages(request: IncomingMessage, socket: Socket, lingerMs = LINGER_MS): void {
  // Node's own close of a `Connection: close` response, replaced on this socket alone.
  socket.destroySoon = () => {
    socket.end();
    const timer = setTimeout(() => socket.destroy(), lingerMs);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
  };
  // The body's bytes still go through the HTTP parser into the request: whatever stream was reading
  // it (a refused photo's check) lets go, and flowing with no reader drops them.
  request.unpipe();
  request.resume();
}
