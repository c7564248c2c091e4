/**
 * The port of the agents host (`agents/host.mjs`, started beside the gateway by `host.ts`): the
 * one the shipped manifests name, 4300, when it is free; `HOLON_AGENTS_PORT` or `--agents-port`
 * when someone names one.
 */
import { portTaken } from '../http/port-probe.ts';

/** The port the shipped manifests name for the agents host, taken by default when it is free. */
export const DEFAULT_AGENTS_PORT = 4300;

/** `text` as a TCP port (an integer from 0 to 65535). Throws an Error naming `name` otherwise. */
export function parsePort(text: string, name: string): number {
  const port = /^\d{1,5}$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (!Number.isInteger(port) || port > 65535) throw new Error(`${name} ${JSON.stringify(text)} is not a port: write an integer from 0 to 65535`);
  return port;
}

/** The agents host's port `HOLON_AGENTS_PORT` names, or null when it is unset. Throws when it is not a port. */
export function agentsPortFromEnv(env: NodeJS.ProcessEnv = process.env): number | null {
  const text = env.HOLON_AGENTS_PORT;
  return text === undefined || text === '' ? null : parsePort(text, 'HOLON_AGENTS_PORT');
}

/**
 * The agents host's port when nobody named one: {@link DEFAULT_AGENTS_PORT} when it is free, so
 * the manifests' URL holds and every process of a deployment lists the same one; else 0, any free
 * port, so a second gateway on the machine (the dev one beside a hosted one) starts as well.
 */
export async function defaultAgentsPort(): Promise<number> {
  return (await portTaken(DEFAULT_AGENTS_PORT)) ? 0 : DEFAULT_AGENTS_PORT;
}
