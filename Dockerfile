# One image for every workload (`vehicle-inspection start|api|operator|inference`).
# Node 24 comes from the base image, so the `node` devDependency is not installed here.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN node capture/page/build.ts && npm prune --omit=dev --ignore-scripts

FROM node:24-bookworm-slim
# Fonts for the labels drawn on evidence photos.
RUN apt-get update && apt-get install -y --no-install-recommends fonts-dejavu-core && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app /app
ENV NODE_ENV=production DATA_DIR=/data PORT=8080
USER node
EXPOSE 8080
ENTRYPOINT ["node", "bin/vehicle-inspection.ts"]
CMD ["start"]
