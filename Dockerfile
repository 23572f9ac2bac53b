# Production image: build with the dev dependencies, ship only the runtime ones.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY src ./src
RUN npm run build

FROM node:20-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY mappings ./mappings
RUN mkdir -p /config /state && chown node:node /state
USER node
VOLUME ["/state"]
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["run", "--config", "/config/config.yaml"]
