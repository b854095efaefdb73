#!/usr/bin/env bash
# real-node.sh [BIN_DIR]
#
# The install proof on a real Kubernetes 1.20.2 node (../shared/tools/kube-node: kubelet,
# containerd, real pods): builds the controllers' image, starts a node, loads the image,
# runs `check --pre` and `install`, registers the node itself as a managed cluster with
# `register cluster --service-account` (as Sveltos registers its management cluster), runs
# `check`, the network-policy example on real pods, writes a v1alpha1 EventSource through the
# HTTPS conversion webhook, checks that a second install changes nothing, uninstalls (add-ons
# withdrawn first) and with --crds, and stops the node. Exit 0 when every step held.
#
# Not part of CI: the node takes ~15-30 min to build once per machine (its README says how)
# and needs root. BIN_DIR holds the plugin and both controllers (default: a debug build).
set -euo pipefail
cd "$(dirname "$0")/../.."
node_tool=${KNODE_TOOL:-../shared/tools/kube-node}
cache=${KNODE_CACHE:-$HOME/.cache/kube-node/1.20.2}
if [[ ! -x $cache/bin/kubelet ]]; then
  echo "real-node: not run: no node binaries in $cache (build them with $node_tool/build.sh)" >&2
  exit 2
fi
bins=${1:-}
if [[ -z $bins ]]; then
  cargo build --locked -p kubectl-sveltos-events -p sveltos-events-controller -p sveltos-events-agent
  bins=target/debug
fi
plugin=$bins/kubectl-sveltos_events
image=sveltos-events.local/controllers:e2e
work=$(mktemp -d -t sveltos-events-node.XXXXXX)
dir=$work/node
step() { printf '\n==> %s\n' "$*"; }
cleanup() {
  local status=$?
  if ((status != 0)) && [[ -f $dir/kubeconfig ]]; then
    # What the controllers and the registered clusters said, for the failure above.
    for deployment in sveltos-events-agent sveltos-events-manager; do
      echo "--- logs of $deployment" >&2
      k -n projectsveltos logs "deploy/$deployment" --tail=40 >&2 2>&1 || true
    done
    k get sveltoscluster -A -o yaml >&2 2>&1 || true
  fi
  "$node_tool/node.sh" stop "$dir" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
k() { "$cache/bin/kubectl" --kubeconfig "$dir/kubeconfig" "$@"; }
eventually() { # eventually SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > end)); then echo "real-node: timed out waiting for $what" >&2; exit 1; fi
    sleep 0.2
  done
}

step "image"
tests/e2e/build-image.sh "$work/image.tar" "$image" "$bins"
step "node (kube-proxy on: the API server reaches the webhook through its Service)"
mkdir -p "$dir"
KNODE_KUBE_PROXY=1 "$node_tool/node.sh" start "$dir"
"$node_tool/node.sh" load "$dir" "$work/image.tar"

step "a user who may only read is refused before anything changes, each missing right named"
k -n default create serviceaccount reader
k create clusterrolebinding reader --clusterrole view --serviceaccount default:reader
reader_token_named() { test -n "$(k -n default get sa reader -o jsonpath='{.secrets[0].name}')"; }
eventually 30 "the reader's token" reader_token_named
reader_token=$(k -n default get secret "$(k -n default get sa reader -o jsonpath='{.secrets[0].name}')" -o jsonpath='{.data.token}' | base64 -d)
sed "s#^\( *\)\(client-certificate-data\|token\):.*#\1token: $reader_token#; /client-key-data/d" "$dir/kubeconfig" >"$work/reader.kubeconfig"
set +e
"$plugin" check --pre --kubeconfig "$work/reader.kubeconfig"; pre=$?
"$plugin" install --kubeconfig "$work/reader.kubeconfig" --image "$image" 2>"$work/refused.txt"; refused=$?
set -e
cat "$work/refused.txt"
test "$pre" = 1 && test "$refused" = 2
grep -q "get/create/patch customresourcedefinitions.apiextensions.k8s.io;" "$work/refused.txt"
test -z "$(k get crd -o name)"

step "install"
"$plugin" check --pre --kubeconfig "$dir/kubeconfig"
"$plugin" install --kubeconfig "$dir/kubeconfig" --image "$image" --timeout 3m
k -n projectsveltos get pods
ca_bundle_written() {
  test -n "$(k get crd eventsources.lib.projectsveltos.io -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')"
}
eventually 60 "the CA bundle in the EventSource CRD" ca_bundle_written

step "register the node as a managed cluster (ServiceAccount token, in-cluster address)"
"$plugin" register cluster --kubeconfig "$dir/kubeconfig" -n default --name knode --labels env=fv \
  --cluster-kubeconfig "$dir/kubeconfig" --service-account --cluster-server https://10.0.0.1:443
# A function, so that each try reads the status anew (an argument's $(...) is read once).
cluster_ready() { test "$(k -n default get sveltoscluster knode -o jsonpath='{.status.ready}')" = true; }
eventually 60 "the cluster to be ready" cluster_ready

step "check"
eventually 60 "check to pass" "$plugin" check --kubeconfig "$dir/kubeconfig"
"$plugin" check --kubeconfig "$dir/kubeconfig"

step "the network-policy example on real pods"
k apply -f examples/network-policy/
k apply -f examples/network-policy/managed/service.yaml
eventually 60 "NetworkPolicy default/front-my-service" k -n default get networkpolicy front-my-service
k get eventreports,clusterprofiles,clustersummaries -A
k -n default delete service my-service
eventually 60 "the NetworkPolicy withdrawn" bash -c "! $cache/bin/kubectl --kubeconfig $dir/kubeconfig -n default get networkpolicy front-my-service"

step "a v1alpha1 EventSource through the HTTPS conversion webhook"
k apply -f examples/seeds/001-06-eventsource-lua-labels.yaml
k get --raw /apis/lib.projectsveltos.io/v1beta1/eventsources/sveltos-service | grep -q '"resourceSelectors"'

step "install again: nothing to change"
"$plugin" install --kubeconfig "$dir/kubeconfig" --image "$image" --wait=false | tee "$work/again.txt"
grep -q "nothing to change" "$work/again.txt"
if k -n projectsveltos logs deploy/sveltos-events-manager | grep -qi forbidden \
  || k -n projectsveltos logs deploy/sveltos-events-agent | grep -qi forbidden; then
  echo "real-node: a controller was refused a request (RBAC):" >&2
  k -n projectsveltos logs deploy/sveltos-events-manager | grep -i forbidden >&2 || true
  k -n projectsveltos logs deploy/sveltos-events-agent | grep -i forbidden >&2 || true
  exit 1
fi

step "install --manager-memory: the manager's limit changes and it rolls out"
"$plugin" install --kubeconfig "$dir/kubeconfig" --image "$image" --manager-memory 768Mi --timeout 2m
limit=$(k -n projectsveltos get deploy sveltos-events-manager \
  -o jsonpath='{.spec.template.spec.containers[0].resources.limits.memory}')
test "$limit" = 768Mi

step "uninstall: the add-ons withdrawn first, then the controllers"
k apply -f examples/network-policy/managed/service.yaml
eventually 60 "NetworkPolicy default/front-my-service again" k -n default get networkpolicy front-my-service
"$plugin" uninstall --kubeconfig "$dir/kubeconfig" --timeout 2m
if k -n default get networkpolicy front-my-service >/dev/null 2>&1; then
  echo "real-node: uninstall left the add-on behind" >&2; exit 1
fi
test -z "$(k -n projectsveltos get deployments,pods -o name)"
"$plugin" deregister cluster --kubeconfig "$dir/kubeconfig" -n default --name knode \
  --cluster-kubeconfig "$dir/kubeconfig"
"$plugin" uninstall --kubeconfig "$dir/kubeconfig" --crds --yes --timeout 2m
if k get crd -o name | grep -q projectsveltos.io; then
  echo "real-node: uninstall --crds left CRDs behind" >&2; exit 1
fi
test -z "$(k get clusterroles,clusterrolebindings,namespaces -l app.kubernetes.io/part-of=sveltos-events -o name)"

echo
echo "real-node: every step held"
