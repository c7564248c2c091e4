/**
 * Whether a TCP port is already taken, found by trying to listen on it: the one question the
 * server commands' start-up checks (`src/cli/preflight.ts`) and the agents host's default port
 * (`src/agents-host/port.ts`) ask before anything is opened.
 */
import { createServer } from 'node:net';

/**
 * Resolves true when nothing can listen on `host:port` because something already does
 * (EADDRINUSE); false once a probe listened and closed again. Any other error (an address this
 * machine does not have) is thrown. Port 0 (any free port) is never taken.
 */
export async function portTaken(port: number, host = '127.0.0.1'): Promise<boolean> {
  if (port === 0) return false;
  const probe = createServer();
  return new Promise((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? resolve(true) : reject(error)));
    probe.listen(port, host, () => probe.close(() => resolve(false)));
  });
}
