/**
 * Throwaway certificates for the mutual TLS of the hop to a remote binding (issue 23 §4), made
 * with the openssl command line (EC P-256, valid one day) in a directory of their own: a test CA;
 * `binding`, the server certificate it signed for 127.0.0.1; `gateway`, a client certificate it
 * signed; `stranger`, a self-signed client certificate (another CA's, as far as the binding
 * knows); and `other-ca`, a second CA that signed none of them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MutualTls } from '../../src/clearing/tls.ts';

/** The names of the certificates made, each a `<name>.crt` and `<name>.key` in {@link Certificates.dir}. */
export type CertificateName = 'ca' | 'other-ca' | 'binding' | 'gateway' | 'stranger';

/** The certificates of one test: their PEM text, their files, and the parties' sides of mutual TLS. */
export interface Certificates {
  /** The directory holding `<name>.crt` and `<name>.key`. */
  dir: string;
  /** The PEM text of a certificate or key, e.g. `pem('gateway', 'crt')`. */
  pem(name: CertificateName, part: 'crt' | 'key'): string;
  /** The path of a certificate or key file. */
  file(name: CertificateName, part: 'crt' | 'key'): string;
  /** The binding's side: its certificate and key, trusting client certificates the test CA signed. */
  binding: MutualTls;
  /** A client's side (`gateway` or `stranger`): its certificate and key, trusting the binding's CA. */
  client(name: 'gateway' | 'stranger'): MutualTls;
  /** Removes the directory. */
  remove(): void;
}

/** Makes the certificates of {@link Certificates} in a new temporary directory (openssl, a fraction of a second). */
export function makeCertificates(): Certificates {
  const dir = mkdtempSync(path.join(tmpdir(), 'holon-tls-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const issue = (name: CertificateName, subject: string, extensions: string, signer: 'ca' | null) => {
    openssl('req', '-new', ...newKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    writeFileSync(path.join(dir, `${name}.ext`), extensions);
    const signedBy = signer ? ['-CA', `${signer}.crt`, '-CAkey', `${signer}.key`, '-CAcreateserial'] : ['-signkey', `${name}.key`];
    openssl('x509', '-req', '-in', `${name}.csr`, ...signedBy, '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
  };
  for (const ca of ['ca', 'other-ca'] as const) openssl('req', '-x509', ...newKey, '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-subj', `/CN=holon test ${ca}`, '-days', '1');
  issue('binding', '/CN=binding', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n', 'ca');
  issue('gateway', '/CN=gateway', 'extendedKeyUsage=clientAuth\n', 'ca');
  issue('stranger', '/CN=stranger', 'extendedKeyUsage=clientAuth\n', null);
  const file = (name: CertificateName, part: 'crt' | 'key') => path.join(dir, `${name}.${part}`);
  const pem = (name: CertificateName, part: 'crt' | 'key') => readFileSync(file(name, part), 'utf8');
  return {
    dir,
    pem,
    file,
    binding: { cert: pem('binding', 'crt'), key: pem('binding', 'key'), ca: pem('ca', 'crt') },
    client: (name) => ({ cert: pem(name, 'crt'), key: pem(name, 'key'), ca: pem('ca', 'crt') }),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
