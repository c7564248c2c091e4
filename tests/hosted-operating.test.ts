/**
 * Operating the hosted gateway (gateway §7 "Operating"): structured request logs that never
 * carry a key or an input, and the Dockerfile: every path it copies exists and the command it
 * runs starts the hosted gateway (a `docker build` is not run here: Docker may be absent).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import pino from 'pino';
import { startTestHosted } from './helpers/hosted.ts';

test('request logs carry method, path, status, duration and the key prefix; never a key, a query or an input', async () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const hosted = await startTestHosted({ logger: pino({ level: 'info' }, sink) });
  try {
    const account = await hosted.signup();
    await hosted.http.post('/v0/calls').set('authorization', `Bearer ${account.agent}`).send({ mandate: account.mandate, agent: 'gt/run', input: { do: 'ok', marker: 'secret-input-marker' } }).expect(200);
    await hosted.http.get('/v0/auth/github/callback?code=secret-code&state=s').expect(503);
    const requests = lines.map((line) => JSON.parse(line)).filter((entry) => typeof entry.method === 'string' && 'status' in entry);
    const call = requests.find((entry) => entry.path === '/v0/calls');
    assert.deepEqual([call.method, call.status, call.principal, typeof call.ms], ['POST', 200, account.agent_prefix, 'number']);
    assert.equal(requests.find((entry) => entry.path === '/v0/signup').principal, 'none');
    const all = lines.join('\n');
    for (const secret of [account.agent, account.human, 'secret-input-marker', 'SECRET-INPUT-MARKER', 'secret-code']) assert.ok(!all.includes(secret), `the logs carry ${secret}`);
  } finally {
    await hosted.close();
  }
});

test('the Dockerfile copies paths that exist and runs the hosted gateway in production', () => {
  const dockerfile = readFileSync(new URL('../Dockerfile', import.meta.url), 'utf8');
  const copies = [...dockerfile.matchAll(/^COPY\s+(?!--from)(.+)$/gm)].map((m) => m[1].trim().split(/\s+/).slice(0, -1)).flat();
  assert.ok(copies.length > 0);
  for (const source of copies) assert.ok(existsSync(new URL(`../${source}`, import.meta.url)), `COPY ${source}: no such path`);
  assert.match(dockerfile, /^ENV NODE_ENV=production$/m);
  const cmd = JSON.parse(/^CMD (.+)$/m.exec(dockerfile)![1]) as string[];
  assert.deepEqual(cmd, ['node', 'src/bin.mjs', 'serve', '--hosted']);
  const bin = readFileSync(new URL('../src/bin.mjs', import.meta.url), 'utf8');
  assert.match(bin, /cli\.ts/);
  assert.match(readFileSync(new URL('../src/cli.ts', import.meta.url), 'utf8'), /if \(opts\.hosted\) \{\s*const \{ startHostedGateway \}/);
});

test('a request that fails because the database failed stops the gateway; a refused statement does not', async () => {
  const stopped: unknown[] = [];
  const hosted = await startTestHosted({ stop: (error) => stopped.push(error) });
  try {
    const account = await hosted.signup();
    assert.equal((await hosted.http.post('/v0/signup').send({ handle: account.handle, email: 'x@example.test' })).status, 409);
    assert.equal(stopped.length, 0);
    await hosted.running.db.knex.destroy();
    const failed = await hosted.http.get('/v0/me').set('authorization', `Bearer ${account.human}`);
    assert.deepEqual([failed.status, failed.body.code, stopped.length], [500, 'internal_error', 1]);
  } finally {
    await hosted.close();
  }
});
