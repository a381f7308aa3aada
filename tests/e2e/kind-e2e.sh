#!/usr/bin/env bash
# The whole product on a real Kubernetes cluster, on a laptop: kind, Strimzi (a Kafka cluster, a KafkaUser),
# kubeflow spark-operator, our images and Helm chart; then a policy (SparkApplication engine, connecting through
# spec.kafka.strimzi) proposes the offsets of a stale consumer group, one proposal is approved, the offsets are
# deleted, and restored from the backup. Needs docker (or podman with KIND_EXPERIMENTAL_PROVIDER=podman), kind,
# kubectl and helm, and network access to pull images and charts. About 10-15 minutes.
#
#   tests/e2e/kind-e2e.sh            # creates cluster koo-e2e and deletes it at the end
#   KEEP=1 tests/e2e/kind-e2e.sh     # leaves the cluster up (kubectl --context kind-koo-e2e ...)
#
# Pinned versions (override with the environment): STRIMZI_VERSION, KAFKA_VERSION, SPARK_OPERATOR_VERSION.
set -euo pipefail
cd "$(dirname "$0")/../.."

CLUSTER="${CLUSTER:-koo-e2e}"
STRIMZI_VERSION="${STRIMZI_VERSION:-0.48.0}"
KAFKA_VERSION="${KAFKA_VERSION:-4.1.0}"
SPARK_OPERATOR_VERSION="${SPARK_OPERATOR_VERSION:-2.3.0}"
VERSION="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)"
OPERATOR_IMAGE="${OPERATOR_IMAGE:-ghcr.io/example/kafka-offset-operator:$VERSION}"
SPARK_IMAGE="${SPARK_IMAGE:-ghcr.io/example/kafka-offset-operator-spark:$VERSION}"
KAFKA_IMAGE="quay.io/strimzi/kafka:${STRIMZI_VERSION}-kafka-${KAFKA_VERSION}"
NS=kafka
K="kubectl --context kind-$CLUSTER"

say() { printf '[e2e] %s\n' "$*" >&2; }
need() { command -v "$1" >/dev/null 2>&1 || { say "missing: $1 ($2)"; exit 2; }; }
need kind "https://kind.sigs.k8s.io"; need kubectl "https://kubernetes.io/docs/tasks/tools/"; need helm "https://helm.sh"
cleanup() { if [ -z "${KEEP:-}" ]; then say "deleting cluster $CLUSTER"; kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT

# Poll `kubectl get ... -o jsonpath` until it prints $want (or time out), as a user would watch it.
wait_for() {  # wait_for SECONDS WANT kubectl-get-args...
    local deadline=$((SECONDS + $1)) want="$2"; shift 2
    until [ "$($K get "$@" 2>/dev/null)" = "$want" ]; do
        [ $SECONDS -lt $deadline ] || { say "timed out waiting for '$want' from: kubectl get $*"; $K get "$@" -o yaml || true; exit 1; }
        sleep 5
    done
}
kafka_tool() {  # kafka_tool SCRIPT ARGS... : Kafka's own CLI in a one-off pod, on the plain listener
    $K -n "$NS" run "tool-$RANDOM" --rm -i --restart=Never --quiet --image="$KAFKA_IMAGE" -- \
        "bin/$1" --bootstrap-server events-kafka-bootstrap:9092 "${@:2}"
}

say "cluster $CLUSTER"
kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 120s

say "images $OPERATOR_IMAGE and $SPARK_IMAGE"
scripts/dev.sh images
kind load docker-image --name "$CLUSTER" "$OPERATOR_IMAGE" "$SPARK_IMAGE"

say "Strimzi $STRIMZI_VERSION and a Kafka $KAFKA_VERSION cluster with a SCRAM user"
$K create namespace "$NS" --dry-run=client -o yaml | $K apply -f -
$K -n "$NS" apply -f "https://github.com/strimzi/strimzi-kafka-operator/releases/download/$STRIMZI_VERSION/strimzi-cluster-operator-$STRIMZI_VERSION.yaml"
$K -n "$NS" rollout status deployment/strimzi-cluster-operator --timeout=300s
$K -n "$NS" apply -f - <<YAML
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaNodePool
metadata: {name: dual, labels: {strimzi.io/cluster: events}}
spec:
  replicas: 1
  roles: [controller, broker]
  storage: {type: ephemeral}
---
apiVersion: kafka.strimzi.io/v1beta2
kind: Kafka
metadata: {name: events, annotations: {strimzi.io/node-pools: enabled, strimzi.io/kraft: enabled}}
spec:
  kafka:
    version: $KAFKA_VERSION
    listeners:
      - {name: plain, port: 9092, type: internal, tls: false}
      - {name: scram, port: 9094, type: internal, tls: true, authentication: {type: scram-sha-512}}
    config:
      offsets.topic.replication.factor: 1
      offsets.topic.num.partitions: 5
      transaction.state.log.replication.factor: 1
      transaction.state.log.min.isr: 1
  entityOperator: {userOperator: {}}
---
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaUser
metadata: {name: offsets-admin, labels: {strimzi.io/cluster: events}}
spec:
  authentication: {type: scram-sha-512}
YAML
$K -n "$NS" wait kafka/events --for=condition=Ready --timeout=600s
$K -n "$NS" wait kafkauser/offsets-admin --for=condition=Ready --timeout=300s

say "kubeflow spark-operator $SPARK_OPERATOR_VERSION"
helm repo add spark-operator https://kubeflow.github.io/spark-operator >/dev/null
helm --kube-context "kind-$CLUSTER" upgrade --install spark-operator spark-operator/spark-operator \
    --version "$SPARK_OPERATOR_VERSION" -n spark-operator --create-namespace --set "spark.jobNamespaces={$NS}" --wait
# The driver runs as spark-operator's driver account (its chart grants it pods and services in $NS); our
# Role lets it read the policy and write results ConfigMaps (manifests/spark/driver-rbac.yaml, here in $NS).
sed "s/namespace: team-a/namespace: $NS/" manifests/spark/driver-rbac.yaml | $K apply -f -
$K -n "$NS" create rolebinding kafka-offset-spark-results-driver --role=kafka-offset-spark-results \
    --serviceaccount="$NS:spark-operator-spark" --dry-run=client -o yaml | $K apply -f -

say "kafka-offset-operator (Helm chart)"
helm --kube-context "kind-$CLUSTER" upgrade --install koo charts/kafka-offset-operator -n kafka-offset-operator \
    --create-namespace --wait \
    --set image.repository="${OPERATOR_IMAGE%:*}" --set image.tag="${OPERATOR_IMAGE##*:}" \
    --set sparkImage.repository="${SPARK_IMAGE%:*}" --set sparkImage.tag="${SPARK_IMAGE##*:}"

say "a consumer group that read orders and left (Empty)"
kafka_tool kafka-topics.sh --create --topic orders --partitions 2 --if-not-exists
printf 'o1\no2\no3\no4\n' | kafka_tool kafka-console-producer.sh --topic orders
kafka_tool kafka-console-consumer.sh --topic orders --group stale-reader --from-beginning --max-messages 4 >/dev/null

say "a policy in Approve mode, analysis as a SparkApplication, connecting through spec.kafka.strimzi"
$K -n "$NS" apply -f - <<YAML
apiVersion: kafkaoffsets.dev/v1alpha1
kind: ConsumerGroupOffsetPolicy
metadata: {name: stale}
spec:
  kafka: {strimzi: {kafka: events, listener: scram, user: offsets-admin}}
  mode: Approve
  groups: {include: [stale-*]}
  rules: {emptyGroupRetention: 1s}
  schedule: {interval: 1h}
  analysis:
    engine: SparkApplication
    sparkApplication: {serviceAccount: spark-operator-spark}
YAML
wait_for 900 True cgop stale -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'
name="$($K -n "$NS" get od -l kafkaoffsets.dev/policy=stale -o 'jsonpath={.items[?(@.spec.group=="stale-reader")].metadata.name}')"
[ -n "$name" ] || { say "no OffsetDeletion proposed for stale-reader"; $K -n "$NS" get cgop stale -o yaml; exit 1; }

say "approve $name; the offsets are backed up and deleted"
$K -n "$NS" patch od "$name" --type merge -p '{"spec":{"approved":true}}'
wait_for 300 Succeeded -n "$NS" od "$name" -o 'jsonpath={.status.phase}'
kafka_tool kafka-consumer-groups.sh --describe --group stale-reader 2>&1 | grep -q "has no active members" || true
backup="$($K -n "$NS" get od "$name" -o 'jsonpath={.status.backup.name}')"
$K -n "$NS" get configmap "$backup" >/dev/null

say "restore from the backup"
$K -n "$NS" patch od "$name" --type merge -p '{"spec":{"restore":true}}'
wait_for 300 Restored -n "$NS" od "$name" -o 'jsonpath={.status.phase}'
kafka_tool kafka-consumer-groups.sh --describe --group stale-reader | grep -q orders
say "passed: proposed, approved, deleted with a backup, restored"
