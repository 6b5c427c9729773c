# syntax=docker/dockerfile:1
# Build and run on the current Node LTS (24); the code also runs on Node 20.19+ (README, "Node versions").
# Build stage: full install (dev deps for tsc and vite), build server and dashboard.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json drizzle.config.ts vite.server.config.ts ./
COPY src ./src
COPY dashboard ./dashboard
COPY migrations ./migrations
RUN npm run build && npm prune --omit=dev

# Runtime stage: production deps, compiled output, migrations; runs as the unprivileged node user.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/dashboard/dist ./dashboard/dist
COPY --from=build --chown=node:node /app/migrations ./migrations
RUN ln -s /app/dist/cli/main.js /usr/local/bin/voxgate && mkdir -p /app/.voxgate && chown node:node /app/.voxgate
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:8080/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["voxgate"]
CMD ["serve"]
