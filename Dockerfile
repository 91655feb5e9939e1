# One image for every workload (`vehicle-inspection start|api|operator|inference`).
# Node 24 comes from the base image, so the `node` devDependency is not installed here.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# The capture page's and the dashboard's scripts and styles (what `npm ci` builds in a checkout).
RUN node capture/page/build.ts && node dashboard/page/build.ts && npm prune --omit=dev --ignore-scripts

# The GPU variant, for detection Jobs on GPU nodes (the chart's detection.jobs.image, with
# ONNX_PROVIDER=cuda): `docker build --target gpu -t vehicle-inspection:gpu .`. The same app on
# NVIDIA's CUDA 12 runtime with cuDNN 9, plus onnxruntime's CUDA provider libraries, which the npm
# package does not carry: its install script fetches them for CUDA 12.
FROM build AS gpu-build
RUN ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js

FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 AS gpu
RUN apt-get update && apt-get install -y --no-install-recommends fonts-dejavu-core ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
COPY --from=gpu-build /app /app
ENV NODE_ENV=production DATA_DIR=/data PORT=8080 ONNX_PROVIDER=cuda
USER 1000
ENTRYPOINT ["node", "bin/vehicle-inspection.ts"]
CMD ["inference"]

# The default image (CPU), the last stage so that a plain `docker build .` makes it.
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
