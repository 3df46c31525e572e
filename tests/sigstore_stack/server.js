#!/usr/bin/env node
// A local, offline Sigstore stack for wscan's keyless tests: an OIDC issuer, Fulcio (with its CT log) and
// Rekor v1, all on one loopback port. Fulcio, the CT log and Rekor are @sigstore/mock's own handlers; this
// script only serves them over HTTP and adapts the wire format where sigstore-python and the mock differ:
//
//   Fulcio  sigstore-python sends the OIDC token as `Authorization: Bearer` and the CSR as base64 of a PEM;
//           the mock wants the token in the body (`credentials.oidcIdentityToken`) and the CSR as PEM. The
//           mock decodes the token without checking it, so the adapter checks it first (signature against
//           the issuer's key, `iss`, `aud` = sigstore, expiry), as a real Fulcio would.
//   Rekor   sigstore-python proposes a dsse entry (`proposedContent`: envelope and verifiers); a real Rekor
//           logs the canonical form (envelope hash, payload hash, signatures with their verifier), which is
//           what sigstore-python checks the bundle against. The mock logs what it is given, so the adapter
//           canonicalizes first. hashedrekord entries are already canonical and pass through.
//   OIDC    the mock has no issuer: this script is one (discovery document, JWKS, and GET /token minting an
//           ES256 ID token for ?sub=IDENTITY; Fulcio certifies `sub` as a URI SAN, issuer as `iss`).
//
// No timestamp authority is served (the mock's TSA takes JSON, not RFC 3161): Rekor v1's signed entry
// timestamp is the source of time, so the signing config lists Rekor v1 only.
//
// Usage: node server.js [--port N] [--host 127.0.0.1] [--exit-with-stdin]
// Prints one JSON line on stdout once listening: {"url", "issuer", "fulcio", "rekor", "token_url",
// "trust_config"} where trust_config is a Sigstore ClientTrustConfig for this stack. --exit-with-stdin stops
// the server when its standard input closes (so a test's crash never leaves it running).
'use strict';

const crypto = require('crypto');
const http = require('http');
const { URL } = require('url');

const mock = require('@sigstore/mock');

const AUDIENCE = 'sigstore';
const CLOCK_SKEW_SECONDS = 60; // trust-config validity starts this long before now
const MAX_BODY = 1 << 20;

function parseArgs(argv) {
  const opts = { port: 0, host: '127.0.0.1', exitWithStdin: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--port') opts.port = Number(argv[++i]);
    else if (arg === '--host') opts.host = argv[++i];
    else if (arg === '--exit-with-stdin') opts.exitWithStdin = true;
    else if (arg === '-h' || arg === '--help') {
      process.stdout.write('usage: node server.js [--port N] [--host 127.0.0.1] [--exit-with-stdin]\n');
      process.exit(0);
    } else {
      process.stderr.write(`unknown argument: ${arg}\n`);
      process.exit(2);
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) {
    process.stderr.write('--port must be 0..65535\n');
    process.exit(2);
  }
  return opts;
}

const b64url = (buf) => Buffer.from(buf).toString('base64url');
const ecKeyPair = () => crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const spkiDER = (publicKey) => publicKey.export({ format: 'der', type: 'spki' });

// --- OIDC issuer ----------------------------------------------------------------------------------------

class Issuer {
  constructor(url) {
    this.url = url;
    this.keys = ecKeyPair();
    this.kid = crypto.createHash('sha256').update(spkiDER(this.keys.publicKey)).digest('hex').slice(0, 16);
  }

  discovery() {
    return {
      issuer: this.url,
      authorization_endpoint: `${this.url}/auth`,
      token_endpoint: `${this.url}/token`,
      jwks_uri: `${this.url}/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
    };
  }

  jwks() {
    const jwk = this.keys.publicKey.export({ format: 'jwk' });
    return { keys: [{ ...jwk, kid: this.kid, alg: 'ES256', use: 'sig' }] };
  }

  mint(sub, ttlSeconds) {
    const now = Math.floor(Date.now() / 1000);
    const header = { alg: 'ES256', typ: 'JWT', kid: this.kid };
    const claims = { iss: this.url, sub, aud: AUDIENCE, iat: now, nbf: now, exp: now + ttlSeconds };
    if (sub.includes('@')) Object.assign(claims, { email: sub, email_verified: true });
    const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`;
    const sig = crypto.sign('sha256', Buffer.from(input), { key: this.keys.privateKey, dsaEncoding: 'ieee-p1363' });
    return `${input}.${b64url(sig)}`;
  }

  // Throws unless `token` is one this issuer minted, still valid, for Sigstore.
  check(token) {
    const parts = String(token || '').split('.');
    if (parts.length !== 3) throw new Error('malformed identity token');
    const [h, c, s] = parts;
    const header = JSON.parse(Buffer.from(h, 'base64url').toString());
    if (header.alg !== 'ES256') throw new Error(`unsupported token algorithm ${header.alg}`);
    const ok = crypto.verify('sha256', Buffer.from(`${h}.${c}`),
      { key: this.keys.publicKey, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
    if (!ok) throw new Error('identity token signature does not verify');
    const claims = JSON.parse(Buffer.from(c, 'base64url').toString());
    const now = Math.floor(Date.now() / 1000);
    if (claims.iss !== this.url) throw new Error(`unknown token issuer ${claims.iss}`);
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(AUDIENCE)) throw new Error('token audience is not sigstore');
    if (typeof claims.exp !== 'number' || claims.exp <= now) throw new Error('identity token expired');
    if (typeof claims.nbf === 'number' && claims.nbf > now + 5) throw new Error('identity token not yet valid');
    if (!claims.sub) throw new Error('identity token has no sub');
    return claims;
  }
}

// --- wire adapters ----------------------------------------------------------------------------------------

// sigstore-python's Fulcio v2 request -> the mock's.
function adaptFulcioRequest(body, authorization, issuer) {
  const request = JSON.parse(body);
  const match = /^Bearer\s+(\S+)$/i.exec(authorization || '');
  const token = match ? match[1] : request.credentials && request.credentials.oidcIdentityToken;
  issuer.check(token);
  const adapted = { credentials: { oidcIdentityToken: token } };
  if (request.publicKeyRequest) {
    adapted.publicKeyRequest = request.publicKeyRequest;
  } else {
    let csr = String(request.certificateSigningRequest || '');
    if (!csr.includes('-----BEGIN')) csr = Buffer.from(csr, 'base64').toString('utf8');
    adapted.certificateSigningRequest = csr;
  }
  return JSON.stringify(adapted);
}

// A proposed Rekor v1 entry -> the canonical entry a real Rekor would log.
function canonicalRekorEntry(body) {
  const entry = JSON.parse(body);
  if (entry.kind !== 'dsse' || !entry.spec || !entry.spec.proposedContent) return body;
  const { envelope, verifiers } = entry.spec.proposedContent;
  if (typeof envelope !== 'string' || !Array.isArray(verifiers) || verifiers.length === 0) {
    throw new Error('dsse entry needs an envelope and at least one verifier');
  }
  const parsed = JSON.parse(envelope);
  const sha256 = (data) => crypto.createHash('sha256').update(data).digest('hex');
  const payload = Buffer.from(parsed.payload, 'base64');
  const signatures = (parsed.signatures || []).map((sig) => {
    // Like Rekor: each signature is paired with the verifier (a base64 PEM certificate) that verifies it.
    const pae = paeEncode(parsed.payloadType, payload);
    const verifier = verifiers.find((v) => verifies(v, pae, Buffer.from(sig.sig, 'base64')));
    if (verifier === undefined) throw new Error('dsse signature verifies with no given verifier');
    return { signature: sig.sig, verifier };
  });
  if (signatures.length === 0) throw new Error('dsse envelope has no signatures');
  return JSON.stringify({
    apiVersion: entry.apiVersion || '0.0.1',
    kind: 'dsse',
    spec: {
      envelopeHash: { algorithm: 'sha256', value: sha256(envelope) },
      payloadHash: { algorithm: 'sha256', value: sha256(payload) },
      signatures,
    },
  });
}

function paeEncode(type, payload) {
  const t = Buffer.from(type, 'utf8');
  return Buffer.concat([Buffer.from(`DSSEv1 ${t.length} `), t, Buffer.from(` ${payload.length} `), payload]);
}

function verifies(verifierB64, data, signature) {
  try {
    const cert = new crypto.X509Certificate(Buffer.from(verifierB64, 'base64').toString('utf8'));
    return crypto.verify('sha256', data, cert.publicKey, signature);
  } catch {
    return false;
  }
}

// --- trust config -------------------------------------------------------------------------------------------

function trustConfig({ url, caRoot, ctlogKey, rekorKey, start }) {
  const keyId = (der) => crypto.createHash('sha256').update(der).digest('base64');
  const validFor = { start };
  const service = (u) => ({ url: u, majorApiVersion: 1, validFor, operator: 'wscan-test' });
  return {
    mediaType: 'application/vnd.dev.sigstore.clienttrustconfig.v0.1+json',
    trustedRoot: {
      mediaType: 'application/vnd.dev.sigstore.trustedroot+json;version=0.1',
      tlogs: [{
        baseUrl: url,
        hashAlgorithm: 'SHA2_256',
        publicKey: { rawBytes: rekorKey.toString('base64'), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor },
        logId: { keyId: keyId(rekorKey) },
      }],
      certificateAuthorities: [{
        subject: { organization: 'sigstore.mock', commonName: 'sigstore' },
        uri: url,
        certChain: { certificates: [{ rawBytes: caRoot.toString('base64') }] },
        validFor,
      }],
      ctlogs: [{
        baseUrl: url,
        hashAlgorithm: 'SHA2_256',
        publicKey: { rawBytes: ctlogKey.toString('base64'), keyDetails: 'PKIX_ECDSA_P256_SHA_256', validFor },
        logId: { keyId: keyId(ctlogKey) },
      }],
      timestampAuthorities: [],
    },
    signingConfig: {
      mediaType: 'application/vnd.dev.sigstore.signingconfig.v0.2+json',
      caUrls: [service(url)],
      oidcUrls: [service(url)],
      rekorTlogUrls: [service(url)],
      tsaUrls: [],
      rekorTlogConfig: { selector: 'ANY' },
    },
  };
}

// --- HTTP -------------------------------------------------------------------------------------------------

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new Error('request body too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res, status, body, contentType = 'application/json') {
  const text = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const server = http.createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  const url = `http://${opts.host}:${server.address().port}`;
  const start = new Date(Date.now() - CLOCK_SKEW_SECONDS * 1000).toISOString();

  const issuer = new Issuer(url);
  const ctlogKeys = ecKeyPair();
  const caKeys = ecKeyPair();
  const rekorKeys = ecKeyPair();
  const ctlog = await mock.initializeCTLog(ctlogKeys);
  const ca = await mock.initializeCA(caKeys, ctlog);
  const fulcio = mock.fulcioHandler(ca);
  const tlog = await mock.initializeTLog(url, rekorKeys);
  const rekor = mock.rekorHandler(tlog);
  const config = trustConfig({
    url, caRoot: ca.rootCertificate, ctlogKey: ctlog.publicKey, rekorKey: tlog.publicKey, start,
  });

  const relay = async (res, handler, body) => {
    const { statusCode, response, contentType } = await handler.fn(body);
    send(res, statusCode, response, contentType || 'text/plain');
  };

  server.on('request', async (req, res) => {
    const path = new URL(req.url, url);
    const route = `${req.method} ${path.pathname}`;
    try {
      if (route === 'GET /.well-known/openid-configuration') return send(res, 200, issuer.discovery());
      if (route === 'GET /jwks') return send(res, 200, issuer.jwks());
      if (route === 'GET /token') {
        const sub = path.searchParams.get('sub') || 'wscan-test@example.com';
        const ttl = Number(path.searchParams.get('ttl') || 600);
        return send(res, 200, { id_token: issuer.mint(sub, ttl), token_type: 'Bearer', expires_in: ttl });
      }
      if (route === 'GET /trust_config.json') return send(res, 200, config);
      if (route === `POST ${fulcio.path}`) {
        let adapted;
        try {
          adapted = adaptFulcioRequest(await readBody(req), req.headers.authorization, issuer);
        } catch (e) {
          return send(res, 401, { code: 401, message: e.message });
        }
        return await relay(res, fulcio, adapted);
      }
      if (route === `POST ${rekor.path}`) {
        let canonical;
        try {
          canonical = canonicalRekorEntry(await readBody(req));
        } catch (e) {
          return send(res, 400, { code: 400, message: e.message });
        }
        return await relay(res, rekor, canonical);
      }
      return send(res, 404, { code: 404, message: `no route ${route}` });
    } catch (e) {
      process.stderr.write(`sigstore stack: ${route}: ${e.stack || e}\n`);
      if (!res.headersSent) send(res, 500, { code: 500, message: String(e.message || e) });
    } finally {
      process.stderr.write(`sigstore stack: ${route} -> ${res.statusCode}\n`);
    }
  });

  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (opts.exitWithStdin) {
    process.stdin.on('end', stop);
    process.stdin.on('error', stop);
    process.stdin.resume();
  }

  process.stdout.write(`${JSON.stringify({
    url, issuer: url, fulcio: url, rekor: url, token_url: `${url}/token`, trust_config: config,
  })}\n`);
}

main().catch((e) => {
  process.stderr.write(`sigstore stack failed to start: ${e.stack || e}\n`);
  process.exit(1);
});
