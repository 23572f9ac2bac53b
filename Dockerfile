# The production image of tableau-activity-otel: compiled with the dev dependencies, shipped
# with the runtime ones only, as the unprivileged `node` user (uid 1000).
#
#   docker build -t tableau-activity-otel .
#   docker run -d --name tao \
#     -v "$PWD/config.yaml:/config/config.yaml:ro" -v tao-state:/state \
#     -e TCM_PAT -p 127.0.0.1:9464:9464 tableau-activity-otel
#
# /config holds config.yaml (and overrides files), /state the checkpoints and dead letters
# (`state: { dir: /state }` in the config). The endpoints listen on 0.0.0.0:9464 (TAO_LISTEN;
# the HEALTHCHECK asks TAO_LISTEN's port). SIGTERM stops gracefully within --grace (30 s:
# give `docker stop -t 40`), SIGHUP reloads the configuration.

# The Node.js version of the image: the LTS line CI tests (.ci/run: Node 24, and Node 20); another
# release with --build-arg NODE_VERSION=24.x.y. No `# syntax=` line: the builder's own Dockerfile
# frontend suffices, so a build needs no frontend image from a registry.
# `npm run image:check` builds this file and checks the container (docs/image.md).
ARG NODE_VERSION=24.21.0

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# the build checks the mapping files and writes their prebuilt catalog, then bundles the CLI
COPY mappings ./mappings
COPY scripts/bundle.mjs ./scripts/bundle.mjs
RUN npm run build

FROM node:${NODE_VERSION}-bookworm-slim AS runtime-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM node:${NODE_VERSION}-bookworm-slim
LABEL org.opencontainers.image.title="tableau-activity-otel" \
      org.opencontainers.image.description="Tableau Cloud Activity Log events as OpenTelemetry log records" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production \
    TAO_LISTEN=0.0.0.0:9464
WORKDIR /app
COPY --from=runtime-deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist ./dist
COPY mappings ./mappings
RUN mkdir -p /config /state && chown node:node /state
USER node
VOLUME ["/config", "/state"]
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TAO_LISTEN||':9464').split(':').pop()+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# (V8's optimizing compiles on the thread that runs the code: src/core/compiler-tiers.ts)
ENTRYPOINT ["node", "--no-concurrent-recompilation", "/app/dist/cli.js"]
CMD ["run", "--config", "/config/config.yaml"]
