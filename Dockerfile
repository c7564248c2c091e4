# The hosted gateway (gateway §7 "Operating"): `holon serve --hosted` and the real MCP agents of
# agents/ (agents/host.mjs, started by the gateway on 127.0.0.1:4300) in one container.
# NODE_ENV=production: the gateway refuses to start without DATABASE_URL, HOLON_PUBLIC_URL,
# HOLON_FILE_SECRET, HOLON_ADMIN_KEY, HOLON_TRUST_PROXY and HOLON_SITE_URL (docs/operators.md
# "Settings"), and without HOLON_SEC_CONTACT when holon-labs/sec-company is taken out of
# HOLON_EXCLUDE (it is in it by default: docs/authors.md "The shipped agents").
#
# Two stages: `build` compiles the command line into dist/ (esbuild, a dev dependency), and the
# image runs that compiled JavaScript, with production dependencies only and no TypeScript loader
# (issue 21 §4). The PGlite template is not built (`--no-template`): production runs on PostgreSQL.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY conformance/package.json conformance/package.json
COPY clients/package.json clients/package.json
# No install scripts: esbuild runs from its platform package, and nothing here needs re2's binding.
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src src
COPY generated generated
COPY migrations migrations
COPY clients/src clients/src
RUN node src/cli/build.mjs --no-template

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
COPY --from=build /app/dist dist
# What the compiled modules read beside their sources (each keeps its source's location): the
# contracts, the console's pages, the dev agents' helpers; agents/host.mjs imports src/ too.
COPY src src
COPY openapi openapi
COPY agents agents
# The public evaluation suites run on each newly published version (gateway §7 "Evaluation").
COPY evals evals
# The docs pages by reader, served at /docs/<page>.md and linked from the /docs reference page.
COPY docs docs
ENV NODE_ENV=production
ENV HOST=0.0.0.0
ENV PORT=8080
EXPOSE 8080
CMD ["node", "dist/holon.js", "serve", "--hosted"]
