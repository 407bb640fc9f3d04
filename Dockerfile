# One image for the API (with the outbox relay inside), the consumer and the CLI.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/agent-client/package.json libs/agent-client/package.json
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:24-bookworm-slim
WORKDIR /app
# NODE_ENV=production: webhook secrets are stored only with WEBHOOK_SECRET_KEYS set (docs/security.md).
# MALLOC_ARENA_MAX=2: at most two glibc malloc arenas per process, as scripts/lib.sh sets (a lower peak RSS).
ENV NODE_ENV=production HOST=0.0.0.0 MALLOC_ARENA_MAX=2
# Owned by root and not writable by the process: a compromised process cannot change the code it runs.
COPY --from=build /app /app
# The unprivileged `node` user (uid 1000) of the base image; nothing here needs root or a port below 1024.
USER node
EXPOSE 3000
CMD ["node", "--max-old-space-size=192", "--max-semi-space-size=8", "--concurrent-turbofan-max-threads=1", "apps/ticket-api/dist/main.js"]
