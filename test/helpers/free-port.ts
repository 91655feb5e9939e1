import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * Ports are drawn below the system's ephemeral range: a port the system hands out for `listen(0)`
 * is in that range, and so is the local port of every outgoing connection, so one chosen that way
 * can be taken by some client's connection before the server that was meant to have it starts
 * (a CI run failed on exactly that: EADDRINUSE on an api replica's port).
 */
const [EPHEMERAL_LOW] = (() => {
  try {
    return readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
  } catch {
    return [49152];
  }
})() as [number];
const LOW = 10_000;
const HIGH = Math.max(LOW + 1_000, (EPHEMERAL_LOW ?? 32768) - 1);
const handedOut = new Set<number>();

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });

/** A port free on loopback now, for a server that must know its port before it starts; never one this process handed out before. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
}

/** `n` ports free on loopback now and all different. */
export async function freePorts(n: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < n; i++) ports.push(await freePort());
  return ports;
}
