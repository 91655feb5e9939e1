#!/usr/bin/env bash
# End to end on a real cluster, for machines with Docker (the build machines have none: the tests
# there run a real control plane without it). Builds the image, makes a kind cluster, loads the
# image, installs the chart, and takes one inspection through the API and the capture API to
# `completed` (test/e2e/walkaround.ts), through a port-forward to the chart's Service; its
# Inspection resource must show it completed too.
#
#   bash test/e2e/kind.sh            # KEEP_CLUSTER=1 leaves the cluster up afterwards
#
# Needs docker, kind, kubectl, helm and Node 24 with `npm ci` done (walkaround.ts uses sharp).
set -euo pipefail
cd "$(dirname "$0")/../.."

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
    kubectl get pods,statefulsets,services -o wide >&2 || true
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
helm upgrade --install "$RELEASE" charts/vehicle-inspection \
  --set publicUrl="http://127.0.0.1:$PORT" \
  --set image.repository=vehicle-inspection --set image.tag=e2e --set image.pullPolicy=Never \
  --set "extraEnv[0].name=PARTS_MODEL" --set "extraEnv[0].value=none" \
  --wait --timeout 5m
kubectl rollout status "statefulset/$RELEASE-vehicle-inspection" --timeout=5m

key=$(kubectl exec "statefulset/$RELEASE-vehicle-inspection" -- node bin/vehicle-inspection.ts keys create --env test)
kubectl port-forward "service/$RELEASE-vehicle-inspection" "$PORT:80" >/dev/null &
forward_pid=$!
for _ in $(seq 1 30); do
  curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
  sleep 1
done

result=$(node test/e2e/walkaround.ts "http://127.0.0.1:$PORT" "$key" | tee /dev/stderr | tail -n 1)
id=$(node -e 'console.log(JSON.parse(process.argv[1]).id)' "$result")
# Its Inspection resource, kept by the service, shows it completed too.
kubectl wait --for=jsonpath='{.status.phase}'=completed "inspection/${id/_/-}" --timeout=60s
kubectl get inspections
echo "kind e2e: an inspection completed on the chart's release $RELEASE"
