import proxyAddr from '@fastify/proxy-addr';
import type { IncomingMessage } from 'node:http';

/** Whether the peer at hop `i` is a proxy whose X-Forwarded-For is believed. */
export type ProxyTrust = (address: string, hop: number) => boolean;

/** TRUSTED_PROXIES compiled once at boot; undefined (nothing is trusted) when the list is empty. */
export function proxyTrust(trusted: readonly string[]): ProxyTrust | undefined {
  return trusted.length ? proxyAddr.compile([...trusted]) : undefined;
}

/**
 * The client's address: the socket's peer, or, when that peer is a trusted proxy, the nearest
 * X-Forwarded-For entry that is not one (the same rule Fastify applies to `req.ip`).
 */
export function clientAddress(req: IncomingMessage, trust: ProxyTrust | undefined): string {
  if (!trust) return req.socket.remoteAddress ?? 'unknown';
  return proxyAddr(req, trust) ?? 'unknown';
}
