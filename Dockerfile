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
ENV NODE_ENV=production HOST=0.0.0.0
COPY --from=build /app /app
EXPOSE 3000
CMD ["node", "--max-old-space-size=192", "--max-semi-space-size=8", "apps/ticket-api/dist/main.js"]
