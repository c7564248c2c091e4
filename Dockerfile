# The hosted gateway (gateway §7 "Operating"): `holon serve --hosted` and the real MCP agents of
# agents/ (agents/host.mjs, started by the gateway on 127.0.0.1:4300) in one container.
# NODE_ENV=production: the gateway refuses to start without DATABASE_URL, HOLON_PUBLIC_URL,
# HOLON_FILE_SECRET, HOLON_ADMIN_KEY, HOLON_TRUST_PROXY and HOLON_SITE_URL (docs/operators.md
# "Settings"), and without HOLON_SEC_CONTACT when holon-labs/sec-company is taken out of
# HOLON_EXCLUDE (it is in it by default: docs/authors.md "The shipped agents").
FROM node:20-bookworm-slim
WORKDIR /app
# re2 compiles from source when its prebuilt binary cannot be fetched.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
COPY conformance/package.json conformance/package.json
COPY clients/package.json clients/package.json
# The root's `prepare` builds the kit and the client packages, which the gateway does not need (and
# their build tools are dev dependencies): skip scripts, then build re2's native binding alone.
RUN npm ci --omit=dev --ignore-scripts && npm rebuild re2 && npm cache clean --force
COPY tsconfig.json ./
COPY src src
COPY generated generated
COPY migrations migrations
COPY openapi openapi
COPY agents agents
# The public evaluation suites run on each newly published version (gateway §7 "Evaluation").
COPY evals evals
# The docs pages by reader, served at /docs/<page>.md and linked from the /docs reference page.
COPY docs docs
# The client commands of the CLI (loaded with `holon serve`) import the typed client's sources.
COPY clients/src clients/src
ENV NODE_ENV=production
ENV HOST=0.0.0.0
ENV PORT=8080
EXPOSE 8080
CMD ["node", "src/bin.mjs", "serve", "--hosted"]
