#!/usr/bin/env bash
# End to end on a real cluster, for machines with Docker (the build machines have none: the tests
# there run a real control plane without it). Builds the image, makes a kind cluster, loads the
# image, installs the chart, and takes one inspection through the API and the capture API to
# `completed` (test/e2e/walkaround.ts), through a port-forward to the chart's Service; its
# Inspection resource must show it completed too.
#
#   bash test/e2e/kind.sh               # embedded mode: one StatefulSet replica
#   MODE=cluster bash test/e2e/kind.sh  # cluster mode: api, operator and inference Deployments, with
#                                       # NATS (its official chart) and MinIO installed beside them
#   KEEP_CLUSTER=1 leaves the cluster up afterwards.
#
# Needs docker, kind, kubectl, helm and Node 24 with `npm ci` done (walkaround.ts uses sharp).
set -euo pipefail
cd "$(dirname "$0")/../.."

MODE=${MODE:-embedded}
CLUSTER=${CLUSTER:-vi-e2e}
RELEASE=vi
IMAGE=vehicle-inspection:e2e
PORT=${PORT:-18080}

for tool in docker kind kubectl helm node; do
  command -v "$tool" >/dev/null || { echo "kind.sh needs $tool on PATH" >&2; exit 2; }
done

forward_pid=""
cleanup() {
  status=$?
  [ -n "$forward_pid" ] && kill "$forward_pid" 2>/dev/null || true
  if [ "$status" -ne 0 ]; then
    echo "--- failed; what the cluster says:" >&2
    kubectl get pods,statefulsets,deployments,services -o wide >&2 || true
    kubectl describe pod -l app.kubernetes.io/instance="$RELEASE" >&2 || true
    kubectl logs -l app.kubernetes.io/instance="$RELEASE" --tail=100 >&2 || true
  fi
  [ "${KEEP_CLUSTER:-}" = 1 ] || kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
  exit "$status"
}
trap cleanup EXIT

docker build -t "$IMAGE" .
kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 120s
kind load docker-image "$IMAGE" --name "$CLUSTER"

# The generated photos show no car: the vehicle check (the parts model) is off, the damage model runs.
common=(
  --set publicUrl="http://127.0.0.1:$PORT"
  --set image.repository=vehicle-inspection --set image.tag=e2e --set image.pullPolicy=Never
  --set "extraEnv[0].name=PARTS_MODEL" --set "extraEnv[0].value=none"
)
if [ "$MODE" = cluster ]; then
  # What the replicas share: NATS with JetStream, and an S3 bucket (MinIO, its credentials in a Secret).
  helm repo add nats https://nats-io.github.io/k8s/helm/charts/ >/dev/null
  helm upgrade --install nats nats/nats --set config.jetstream.enabled=true --wait --timeout 5m
  kubectl create secret generic s3-credentials \
    --from-literal=AWS_ACCESS_KEY_ID=e2e-access --from-literal=AWS_SECRET_ACCESS_KEY=e2e-secret-key \
    --dry-run=client -o yaml | kubectl apply -f -
  kubectl apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: { name: minio }
spec:
  selector: { matchLabels: { app: minio } }
  template:
    metadata: { labels: { app: minio } }
    spec:
      containers:
        - name: minio
          image: minio/minio:latest
          args: [server, /data]
          env:
            - { name: MINIO_ROOT_USER, value: e2e-access }
            - { name: MINIO_ROOT_PASSWORD, value: e2e-secret-key }
          ports: [{ containerPort: 9000 }]
          readinessProbe: { httpGet: { path: /minio/health/ready, port: 9000 } }
          volumeMounts: [{ name: data, mountPath: /data }]
      volumes: [{ name: data, emptyDir: {} }]
---
apiVersion: v1
kind: Service
metadata: { name: minio }
spec:
  selector: { app: minio }
  ports: [{ port: 9000 }]
YAML
  kubectl rollout status deployment/minio --timeout=5m
  kubectl run make-bucket --rm -i --restart=Never --image=minio/mc:latest --command -- sh -c \
    'mc alias set e2e http://minio:9000 e2e-access e2e-secret-key && mc mb --ignore-existing e2e/inspections'
  helm upgrade --install "$RELEASE" charts/vehicle-inspection "${common[@]}" \
    --set mode=cluster --set nats.url=nats://nats:4222 \
    --set s3.bucket=inspections --set s3.endpoint=http://minio:9000 --set s3.forcePathStyle=true \
    --set s3.credentialsSecret=s3-credentials \
    --wait --timeout 5m
  for workload in api operator inference; do
    kubectl rollout status "deployment/$RELEASE-vehicle-inspection-$workload" --timeout=5m
  done
  # Keys live in NATS: any api replica makes one every replica knows.
  key=$(kubectl exec "deployment/$RELEASE-vehicle-inspection-api" -- node bin/vehicle-inspection.ts keys create --env test)
else
  helm upgrade --install "$RELEASE" charts/vehicle-inspection "${common[@]}" --wait --timeout 5m
  kubectl rollout status "statefulset/$RELEASE-vehicle-inspection" --timeout=5m
  key=$(kubectl exec "statefulset/$RELEASE-vehicle-inspection" -- node bin/vehicle-inspection.ts keys create --env test)
fi

kubectl port-forward "service/$RELEASE-vehicle-inspection" "$PORT:80" >/dev/null &
forward_pid=$!
for _ in $(seq 1 30); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 1
done

result=$(node test/e2e/walkaround.ts "http://127.0.0.1:$PORT" "$key" | tee /dev/stderr | tail -n 1)
id=$(node -e 'console.log(JSON.parse(process.argv[1]).id)' "$result")
# Its Inspection resource (the store itself in cluster mode) shows it completed too.
kubectl wait --for=jsonpath='{.status.phase}'=completed "inspection/${id/_/-}" --timeout=60s
kubectl get inspections
echo "kind e2e ($MODE mode): an inspection completed on the chart's release $RELEASE"
