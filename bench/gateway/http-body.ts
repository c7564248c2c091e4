/** Reading a request body in the gateway benchmark's bare servers (`agent.ts`, `floor.ts`). */
import type http from 'node:http';

/** Largest request body read, in bytes (the benchmark sends a few dozen). */
export const BODY_MAX_BYTES = 64 * 1024;

/** Reads a request body as UTF-8 text, up to {@link BODY_MAX_BYTES}; rejects beyond it, naming the bound. */
export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > BODY_MAX_BYTES) reject(new Error(`request body over ${BODY_MAX_BYTES} bytes`));
    });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
