/**
 * The port of the agents host (`agents/host.mjs`, started beside the gateway by `host.ts`): the
 * one the shipped manifests name, 4300, when it is free; `HOLON_AGENTS_PORT` or `--agents-port`
 * when someone names one.
 */
import { envNumber, type NumberVariable } from '../config/env.ts';
import { portTaken } from '../http/port-probe.ts';

/** The port the shipped manifests name for the agents host, taken by default when it is free. */
export const DEFAULT_AGENTS_PORT = 4300;

/** `HOLON_AGENTS_PORT`: the agents host's TCP port, 0 to 65535 (0: any free port); unset, {@link defaultAgentsPort} decides. */
export const AGENTS_PORT_VARIABLE: NumberVariable<null> = {
  name: 'HOLON_AGENTS_PORT',
  what: "the agents host's port, 0 for any free one",
  default: null,
  unset: `${DEFAULT_AGENTS_PORT} when free, else any free port`,
  min: 0,
  max: 65_535,
  integer: true,
};

/** The agents host's port {@link AGENTS_PORT_VARIABLE} names, or null when it is unset. Throws `SettingRefused` when it is not a port. */
export function agentsPortFromEnv(env: NodeJS.ProcessEnv = process.env): number | null {
  return envNumber(env, AGENTS_PORT_VARIABLE);
}

/**
 * The agents host's port when nobody named one: {@link DEFAULT_AGENTS_PORT} when it is free, so
 * the manifests' URL holds and every process of a deployment lists the same one; else 0, any free
 * port, so a second gateway on the machine (the dev one beside a hosted one) starts as well.
 */
export async function defaultAgentsPort(): Promise<number> {
  return (await portTaken(DEFAULT_AGENTS_PORT)) ? 0 : DEFAULT_AGENTS_PORT;
}
