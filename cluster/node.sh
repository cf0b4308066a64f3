#!/usr/bin/env bash
# cluster/node.sh: a Kubernetes cluster with one real node, for `make dev` and the e2e tests:
# the control plane of cluster/kube.sh, plus containerd and runc from Debian, kubelet, kube-proxy
# (iptables) and kube-scheduler built like the other Kubernetes binaries, and a CNI bridge.
#
# Usage:
#   cluster/node.sh up                 everything up, the node Ready (idempotent)
#   cluster/node.sh down [--purge]     stop it all and leave nothing on the machine (the node's
#                                      containers, mounts, bridge, iptables chains, cgroups);
#                                      --purge deletes the state too
#   cluster/node.sh status             what runs; exit 0 only when the node is Ready
#   cluster/node.sh check-gone         after down: fail unless the machine is as before up (the
#                                      sysctls the node could touch, no iptables chain, bridge,
#                                      mountpoint, cgroup or process of the node left)
#   cluster/node.sh import TARBALL     load an image tarball into the node (pods name it with
#                                      imagePullPolicy: Never)
#   cluster/node.sh nsenter CMD...     run CMD in the node's mount namespace (see below)
#   cluster/node.sh pid                print the PID holding that namespace (for nsenter -t)
#   cluster/node.sh sync-hosts         write every Service's names and addresses into the hosts
#                                      file of the node's mount namespace (see "DNS" below); `up`
#                                      runs `node.sh dns`, which does it at every change
#
# How it stays off the machine's settings (see ../shared/testbed-node.md for each trap):
#   - containerd and kubelet run in a private mount namespace, held by a pause process. There,
#     files holding the values kubelet wants are bound over three machine-wide sysctls it would
#     otherwise rewrite (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops), and the
#     fixed paths containerd, runc, CNI and kubelet write (/run/containerd, /var/lib/cni,
#     /var/log/containers, /var/lib/kubelet) are bound to directories under the state. When the
#     holder and its processes exit, every mount goes with them.
#   - The bridge NODE_BRIDGE holds NODE_ADDRESS in a /23: pods get addresses in its first /24,
#     Services in its second. Pods reach the host only (no forwarding, no masquerade: nothing
#     writes ip_forward); the apiserver and kubelet listen on NODE_ADDRESS, nothing on eth0.
#     The /23 also routes the Service range from the host, which the hypervisor's unreachable
#     route over 198.18.0.0/15 would otherwise refuse before kube-proxy's DNAT.
#   - cgroups under /sys/fs/cgroup/*/NODE_CGROUP, not at the shared root; cgroup v1 here, hence
#     failCgroupV1: false. No CAP_SYS_RESOURCE, hence containerd's restrict_oom_score_adj.
#   - kube-proxy leaves conntrack sysctls and route_localnet alone.
#
# DNS: there is no cluster DNS. Pods do not need it (in-cluster config uses the `kubernetes`
# Service's IP). Crossplane core, which calls functions at <service>.<namespace>:9443, runs in
# the node's mount namespace, whose /etc/hosts is a file of ours that the `dns` daemon keeps in
# step with the Services and their endpoints (Go's resolver re-reads it on change); its
# resolv.conf names no server, so nothing else resolves.
#
# State lives in $RUN_DIR/node (RUN_DIR defaults to <repo root>/.run) and the control plane's in
# $RUN_DIR/kube: pki/, containerd/, kubelet/, cni/, mnt/, logs/, *.pid, ports.env.
#
# Environment: RUN_DIR, CACHE_DIR, NODE_TIMEOUT (seconds per wait, default 180).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=cluster/lib/daemon.sh
source "${REPO_ROOT}/cluster/lib/daemon.sh"
# shellcheck source=cluster/lib/ports.sh
source "${REPO_ROOT}/cluster/lib/ports.sh"
# shellcheck source=cluster/lib/pki.sh
source "${REPO_ROOT}/cluster/lib/pki.sh"
RUN_DIR=${RUN_DIR:-${REPO_ROOT}/.run}
STATE=${RUN_DIR}/node
LOGS=${STATE}/logs
PKI=${STATE}/pki
KUBE_STATE=${RUN_DIR}/kube
PORTS_FILE=${STATE}/ports.env
LOG_PREFIX=node.sh
PID_DIR=${STATE}
WAIT_TIMEOUT=${NODE_TIMEOUT:-180}

NODE_NAME=stackservices-node
NODE_BRIDGE=ssnode0
NODE_ADDRESS=198.18.10.1
NODE_PREFIX=198.18.10.0/23
POD_SUBNET=198.18.10.0/24
SERVICE_CIDR=198.18.11.0/24
NODE_CGROUP=stackservices-node
# The sandbox image: tools/cmd/pause, imported at every up (a local name, never pulled).
PAUSE_IMAGE=stackservices.local/pause:1
APT_PACKAGES=(containerd runc containernetworking-plugins iptables)
# Directories the node's mount namespace binds its own over, created empty on the host for the
# binds and removed once the namespace is gone (removing one earlier detaches its bind).
MOUNTPOINTS=(/run/containerd /var/lib/cni /var/log/containers /var/lib/kubelet)
# The sysctls kubelet would set machine-wide, and the values it expects.
SYSCTLS=(vm/overcommit_memory=1 kernel/panic=10 kernel/panic_on_oops=1)
# Every machine-wide setting the node's parts are known to write when misconfigured (kubelet,
# the CNI bridge plugin, kube-proxy), recorded at the first up and compared by check-gone.
WATCHED_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward
	net.ipv4.conf.all.route_localnet net.netfilter.nf_conntrack_max)

# Daemons in start order; down stops them in reverse.
DAEMONS=(holder containerd kubelet kube-proxy dns)
PORT_VARS=(KUBELET_PORT KUBELET_HEALTHZ_PORT PROXY_HEALTHZ_PORT PROXY_METRICS_PORT)

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

KUBE_BIN=
BED_BIN=
resolve_binaries() {
	"${REPO_ROOT}/cluster/tools.sh" kube kube-node bed
	KUBE_BIN=$("${REPO_ROOT}/cluster/tools.sh" path kube)
	BED_BIN=$("${REPO_ROOT}/cluster/tools.sh" path bed)
}

resolve_binaries_quietly() {
	KUBE_BIN=$("${REPO_ROOT}/cluster/tools.sh" path kube)
	BED_BIN=$("${REPO_ROOT}/cluster/tools.sh" path bed)
}

kubectl_() { "${KUBE_BIN}/kubectl" --kubeconfig "${KUBE_STATE}/kubeconfig" --request-timeout=10s "$@"; }

# in_ns CMD... runs CMD in the node's mount namespace. nsenter -m starts it in / there.
in_ns() {
	local holder
	holder=$(daemon_pid holder) || die "the node's mount namespace is not up"
	nsenter -t "${holder}" -m -- "$@"
}

ctr_() { in_ns /usr/bin/ctr --address "${STATE}/containerd/containerd.sock" -n k8s.io "$@"; }

lock() {
	mkdir -p "${STATE}"
	exec 9>"${STATE}/.lock"
	flock -w "${WAIT_TIMEOUT}" 9 || die "another node.sh has held ${STATE}/.lock for ${WAIT_TIMEOUT}s"
}

# ---------------------------------------------------------------------------------------------
# packages, ports, certificates

ensure_packages() {
	local missing=() p
	for p in "${APT_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "${p}" 2>/dev/null | grep -q 'install ok installed' || missing+=("${p}")
	done
	((${#missing[@]} == 0)) && return 0
	log "installing ${missing[*]} from Debian (about 6 s)"
	apt-get update -qq >>"${LOGS}/apt.log" 2>&1 || die "apt-get update failed" "${LOGS}/apt.log"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		-o DPkg::Lock::Timeout=600 "${missing[@]}" >>"${LOGS}/apt.log" 2>&1 ||
		die "apt-get install ${missing[*]} failed" "${LOGS}/apt.log"
}

port_owner() {
	case "$1" in
	KUBELET_*) echo kubelet ;;
	PROXY_*) echo kube-proxy ;;
	esac
}

load_ports() {
	local var
	for var in "${PORT_VARS[@]}"; do printf -v "${var}" '%s' ''; done
	# shellcheck source=/dev/null
	[[ -f "${PORTS_FILE}" ]] && source "${PORTS_FILE}"
	PICKED="${PICKED:-} $(sed -n 's/^[A-Z_]*=//p' "${KUBE_STATE}/ports.env" 2>/dev/null | tr '\n' ' ')"
	for var in "${PORT_VARS[@]}"; do
		local p=${!var}
		if [[ -n "${p}" ]] && { port_free "${p}" || daemon_running "$(port_owner "${var}")"; }; then
			PICKED="${PICKED:-} ${p}"
			continue
		fi
		pick_port "${var}"
	done
	for var in "${PORT_VARS[@]}"; do printf '%s=%s\n' "${var}" "${!var}"; done >"${PORTS_FILE}.tmp"
	mv -f "${PORTS_FILE}.tmp" "${PORTS_FILE}"
}

# ensure_pki issues, from the control plane's CA, the kubelet's client certificate (a node's
# identity: the Node authorizer and NodeRestriction limit it to its own objects), its serving
# certificate and kube-proxy's, once per CA.
ensure_pki() {
	local ca_sum
	ca_sum=$(sha256sum <"${KUBE_STATE}/pki/ca.crt")
	[[ -f "${PKI}/done" && "$(<"${PKI}/done")" == "${ca_sum}" ]] && return 0
	rm -rf "${PKI}"
	mkdir -p "${PKI}"
	chmod 700 "${PKI}"
	cp "${KUBE_STATE}/pki/ca.crt" "${KUBE_STATE}/pki/ca.key" "${PKI}/"
	pki_sign "${PKI}" kubelet "/O=system:nodes/CN=system:node:${NODE_NAME}" "${PKI_LEAF}
extendedKeyUsage=clientAuth"
	pki_sign "${PKI}" kubelet-serving "/CN=${NODE_NAME}" "${PKI_LEAF}
extendedKeyUsage=serverAuth
subjectAltName=IP:${NODE_ADDRESS},DNS:${NODE_NAME}"
	pki_sign "${PKI}" kube-proxy "/CN=system:kube-proxy" "${PKI_LEAF}
extendedKeyUsage=clientAuth"
	rm -f "${PKI}/ca.key"
	echo "${ca_sum}" >"${PKI}/done"
}

# update_file FILE writes stdin to FILE when that changes it: a running kube-proxy exits when
# its configuration file is written, even with the same content.
update_file() {
	local tmp=$1.new
	cat >"${tmp}"
	if cmp -s "${tmp}" "$1"; then
		rm -f "${tmp}"
	else
		mv -f "${tmp}" "$1"
	fi
}

# ---------------------------------------------------------------------------------------------
# network

# ensure_bridge makes the bridge, named after this state directory (its alias): a machine has
# room for one node, and the bridge tells another RUN_DIR's node.sh whose it is.
ensure_bridge() {
	if ip link show "${NODE_BRIDGE}" >/dev/null 2>&1; then
		local owner
		owner=$(ip -o link show "${NODE_BRIDGE}" | sed -n 's/.* alias \(.*\)$/\1/p')
		[[ "${owner}" == "${STATE}" ]] ||
			die "the node of ${owner:-an unknown stack} runs on this machine (bridge ${NODE_BRIDGE}); stop it first (make dev-down, or RUN_DIR=... cluster/node.sh down)"
	else
		ip link add "${NODE_BRIDGE}" type bridge
		ip link set "${NODE_BRIDGE}" alias "${STATE}"
	fi
	ip addr replace "${NODE_ADDRESS}/${NODE_PREFIX#*/}" dev "${NODE_BRIDGE}"
	ip link set "${NODE_BRIDGE}" up
}

write_cni_config() {
	mkdir -p "${STATE}/cni/net.d" "${STATE}/cni/ipam"
	# isGateway false: with true, the bridge plugin writes net.ipv4.ip_forward=1 (machine-wide).
	# The gateway address is already the bridge's, and IPAM still gives pods their routes.
	update_file "${STATE}/cni/net.d/10-node.conflist" <<-EOF
		{"cniVersion": "0.4.0", "name": "stackservices-node", "plugins": [
		  {"type": "bridge", "bridge": "${NODE_BRIDGE}", "isGateway": false, "ipMasq": false, "hairpinMode": true,
		   "ipam": {"type": "host-local", "dataDir": "${STATE}/cni/ipam",
		            "ranges": [[{"subnet": "${POD_SUBNET}", "rangeStart": "${POD_SUBNET%.0/24}.10",
		                         "rangeEnd": "${POD_SUBNET%.0/24}.250", "gateway": "${NODE_ADDRESS}"}]],
		            "routes": [{"dst": "0.0.0.0/0"}]}},
		  {"type": "portmap", "capabilities": {"portMappings": true}}]}
	EOF
}

# ---------------------------------------------------------------------------------------------
# the mount namespace

# start_holder makes the private mount namespace and its binds (see the header).
start_holder() {
	daemon_running holder && return 0
	local d
	for d in "${MOUNTPOINTS[@]}"; do
		[[ -e "${d}" ]] && ! mountpoint -q "${d}" && [[ -n "$(ls -A "${d}" 2>/dev/null)" ]] &&
			die "${d} exists and is not empty: something else on this machine uses it"
		mkdir -p "${d}" "${STATE}/mnt${d}"
	done
	mkdir -p "${STATE}/sysctl/vm" "${STATE}/sysctl/kernel" "${STATE}/etc"
	local s
	for s in "${SYSCTLS[@]}"; do echo "${s#*=}" >"${STATE}/sysctl/${s%%=*}"; done
	[[ -f "${STATE}/etc/hosts" ]] || cp /etc/hosts "${STATE}/etc/hosts"
	# No server: only the hosts file answers (see "DNS" in the header).
	printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"${STATE}/etc/resolv.conf"
	DAEMON_MATCH="${BED_BIN}/pause" daemon_start holder "${LOGS}/holder.log" \
		unshare --mount --propagation private -- "${BED_BIN}/pause"
	wait_for "the mount namespace holder" daemon_running holder
	for s in "${SYSCTLS[@]}"; do
		in_ns mount --bind "${STATE}/sysctl/${s%%=*}" "/proc/sys/${s%%=*}"
	done
	for d in "${MOUNTPOINTS[@]}"; do in_ns mount --bind "${STATE}/mnt${d}" "${d}"; done
	in_ns mount --bind "${STATE}/etc/hosts" /etc/hosts
	in_ns mount --bind "${STATE}/etc/resolv.conf" /etc/resolv.conf
}

# ---------------------------------------------------------------------------------------------
# containerd

write_containerd_config() {
	mkdir -p "${STATE}/containerd/certs.d"
	update_file "${STATE}/containerd/config.toml" <<-EOF
		version = 2
		root = "${STATE}/containerd/root"
		state = "${STATE}/containerd/state"
		disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
		  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
		  "io.containerd.snapshotter.v1.aufs"]
		[grpc]
		  address = "${STATE}/containerd/containerd.sock"
		[ttrpc]
		  address = "${STATE}/containerd/containerd.sock.ttrpc"
		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "${PAUSE_IMAGE}"
		  # runc writes oom_score_adj -998 for sandboxes, which needs CAP_SYS_RESOURCE (absent).
		  restrict_oom_score_adj = true
		  # Pod network namespaces under the state, not in /run/netns (the servers' are there).
		  netns_mounts_under_state_dir = true
		  disable_apparmor = true
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "overlayfs"
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        SystemdCgroup = false
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "${STATE}/cni/net.d"
		  [plugins."io.containerd.grpc.v1.cri".registry]
		    # Empty: registries on 127.0.0.1 are spoken to in plain HTTP without configuration.
		    config_path = "${STATE}/containerd/certs.d"
	EOF
}

containerd_up() { ctr_ version; }

# import_image TARBALL loads a docker-archive image tarball into the node.
import_image() {
	ctr_ images import "$(realpath "$1")" >>"${LOGS}/import.log" 2>&1 ||
		die "cannot import $1 into the node" "${LOGS}/import.log"
}

ensure_pause_image() {
	local tar=${STATE}/pause-image.tar
	"${BED_BIN}/runtime-image" -binary "${BED_BIN}/pause" -entrypoint /pause -tag "${PAUSE_IMAGE}" \
		-out "${tar}" >/dev/null || die "cannot build the pause image"
	import_image "${tar}"
}

# ---------------------------------------------------------------------------------------------
# kubelet and kube-proxy

# ensure_cgroups makes the node's cgroup root in every hierarchy: kubelet refuses a missing one,
# and cpuset children start empty.
ensure_cgroups() {
	local h
	for h in /sys/fs/cgroup/*/; do
		[[ -d "${h}" ]] && mkdir -p "${h}${NODE_CGROUP}"
	done
	local cs=/sys/fs/cgroup/cpuset
	if [[ -d "${cs}/${NODE_CGROUP}" ]]; then
		cat "${cs}/cpuset.cpus" >"${cs}/${NODE_CGROUP}/cpuset.cpus"
		cat "${cs}/cpuset.mems" >"${cs}/${NODE_CGROUP}/cpuset.mems"
	fi
}

write_kubelet_config() {
	mkdir -p "${STATE}/kubelet/root" "${STATE}/kubelet/volume-plugins" "${STATE}/kubelet/pod-logs"
	pki_kubeconfig "${STATE}/kubelet/kubeconfig" "https://${NODE_ADDRESS}:${APISERVER_PORT}" \
		"${PKI}/ca.crt" "${PKI}/kubelet.crt" "${PKI}/kubelet.key"
	update_file "${STATE}/kubelet/config.yaml" <<-EOF
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		address: ${NODE_ADDRESS}
		port: ${KUBELET_PORT}
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: ${KUBELET_HEALTHZ_PORT}
		containerRuntimeEndpoint: unix://${STATE}/containerd/containerd.sock
		imageServiceEndpoint: unix://${STATE}/containerd/containerd.sock
		cgroupDriver: cgroupfs
		cgroupRoot: /${NODE_CGROUP}
		failSwapOn: false
		failCgroupV1: false
		oomScoreAdj: 0
		tlsCertFile: ${PKI}/kubelet-serving.crt
		tlsPrivateKeyFile: ${PKI}/kubelet-serving.key
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: true}
		  x509: {clientCAFile: ${PKI}/ca.crt}
		authorization: {mode: Webhook}
		clusterDomain: cluster.local
		resolvConf: ${STATE}/etc/resolv.conf
		podLogsDir: ${STATE}/kubelet/pod-logs
		volumePluginDir: ${STATE}/kubelet/volume-plugins
		maxPods: 30
		serializeImagePulls: false
		evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
		imageGCHighThresholdPercent: 99
		imageGCLowThresholdPercent: 98
	EOF
}

write_proxy_config() {
	mkdir -p "${STATE}/kube-proxy"
	pki_kubeconfig "${STATE}/kube-proxy/kubeconfig" "https://${NODE_ADDRESS}:${APISERVER_PORT}" \
		"${PKI}/ca.crt" "${PKI}/kube-proxy.crt" "${PKI}/kube-proxy.key"
	# conntrack zeros and localhostNodePorts false: kube-proxy would otherwise write
	# machine-wide sysctls (nf_conntrack_max, the TCP timeouts, route_localnet).
	update_file "${STATE}/kube-proxy/config.yaml" <<-EOF
		apiVersion: kubeproxy.config.k8s.io/v1alpha1
		kind: KubeProxyConfiguration
		clientConnection: {kubeconfig: ${STATE}/kube-proxy/kubeconfig}
		mode: iptables
		hostnameOverride: ${NODE_NAME}
		clusterCIDR: ${POD_SUBNET}
		healthzBindAddress: 127.0.0.1:${PROXY_HEALTHZ_PORT}
		metricsBindAddress: 127.0.0.1:${PROXY_METRICS_PORT}
		nodePortAddresses: ["${NODE_ADDRESS}/32"]
		conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
		iptables: {localhostNodePorts: false}
	EOF
}

node_ready() {
	[[ "$(kubectl_ get node "${NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" == True ]]
}

http_ok() { curl -fsS --max-time 2 -o /dev/null "$1"; }

# ---------------------------------------------------------------------------------------------
# commands

cmd_up() {
	local t0=${SECONDS}
	mkdir -p "${LOGS}"
	lock
	ensure_packages
	resolve_binaries
	daemon_forget_dead "${DAEMONS[@]}"
	# The machine's settings before anything of the node ran (kept across ups: a later up may
	# follow a crash).
	[[ -f "${STATE}/sysctls.before" ]] || watched_sysctls >"${STATE}/sysctls.before"
	ensure_bridge
	RUN_DIR=${RUN_DIR} KUBE_NODE=1 KUBE_ADDRESS=${NODE_ADDRESS} KUBE_SERVICE_CIDR=${SERVICE_CIDR} \
		"${REPO_ROOT}/cluster/kube.sh" up
	# shellcheck source=/dev/null
	source "${KUBE_STATE}/ports.env"
	ensure_pki
	load_ports
	write_cni_config
	ensure_cgroups

	start_holder
	write_containerd_config
	DAEMON_MATCH="/usr/bin/containerd -c ${STATE}/containerd/config.toml" daemon_start containerd \
		"${LOGS}/containerd.log" nsenter -t "$(daemon_pid holder)" -m -- \
		/usr/bin/containerd -c "${STATE}/containerd/config.toml"
	wait_for "containerd" containerd_up
	ensure_pause_image

	write_kubelet_config
	DAEMON_MATCH="${KUBE_BIN}/kubelet" daemon_start kubelet "${LOGS}/kubelet.log" \
		nsenter -t "$(daemon_pid holder)" -m -- "${KUBE_BIN}/kubelet" \
		--config="${STATE}/kubelet/config.yaml" --kubeconfig="${STATE}/kubelet/kubeconfig" \
		--root-dir="${STATE}/kubelet/root" --hostname-override="${NODE_NAME}" \
		--node-ip="${NODE_ADDRESS}" --v=1
	ON_TIMEOUT="tail -n 30 ${LOGS}/kubelet.log"
	wait_for "node ${NODE_NAME} Ready" node_ready

	write_proxy_config
	ON_TIMEOUT="tail -n 30 ${LOGS}/kube-proxy.log"
	daemon_start kube-proxy "${LOGS}/kube-proxy.log" "${KUBE_BIN}/kube-proxy" \
		--config="${STATE}/kube-proxy/config.yaml"
	wait_for "kube-proxy" http_ok "http://127.0.0.1:${PROXY_HEALTHZ_PORT}/healthz"
	ON_TIMEOUT=
	DAEMON_MATCH="${BASH_SOURCE[0]} dns" daemon_start dns "${LOGS}/dns.log" "${BASH_SOURCE[0]}" dns
	log "node ${NODE_NAME} Ready in $((SECONDS - t0))s: apiserver https://${NODE_ADDRESS}:${APISERVER_PORT}, pods ${POD_SUBNET}, services ${SERVICE_CIDR}"
}

# remove_containers kills and deletes every container the node runs (their pods come back
# from the API at the next up), so that no shim outlives containerd.
remove_containers() {
	daemon_running containerd || return 0
	local ids id
	ids=$(ctr_ tasks list -q 2>/dev/null || true)
	for id in ${ids}; do ctr_ tasks kill -s KILL "${id}" >/dev/null 2>&1 || true; done
	for id in ${ids}; do
		local i
		for ((i = 0; i < 50; i++)); do
			ctr_ tasks delete "${id}" >/dev/null 2>&1 && break
			sleep 0.1
		done
	done
	for id in $(ctr_ containers list -q 2>/dev/null || true); do
		ctr_ containers delete "${id}" >/dev/null 2>&1 || true
	done
}

# stop_shims stops the containerd shims that serve our containerd (their command line names
# its socket), which run in sessions of their own.
stop_shims() {
	local pid
	for pid in $(pgrep -f "containerd-shim.*${STATE}/containerd/containerd.sock" || true); do
		kill -KILL "${pid}" 2>/dev/null || true
	done
}

# remove_iptables deletes the chains kubelet made in the shared network namespace (kube-proxy
# --cleanup only removes its own), in iptables and ip6tables.
remove_iptables() {
	local ipt table chain hook
	for ipt in iptables ip6tables; do
		command -v "${ipt}" >/dev/null || continue
		for hook in INPUT OUTPUT; do
			while "${ipt}" -t filter -D "${hook}" -j KUBE-FIREWALL 2>/dev/null; do :; done
		done
		for table in filter nat mangle; do
			for chain in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT; do
				"${ipt}" -t "${table}" -F "${chain}" 2>/dev/null || true
				"${ipt}" -t "${table}" -X "${chain}" 2>/dev/null || true
			done
		done
	done
}

# remove_cgroups removes the node's cgroup trees, deepest first.
remove_cgroups() {
	local h
	for h in /sys/fs/cgroup/*/"${NODE_CGROUP}"; do
		[[ -d "${h}" ]] || continue
		find "${h}" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
}

cmd_down() {
	local purge=false
	case "${1:-}" in
	"") ;;
	--purge) purge=true ;;
	*) usage ;;
	esac
	mkdir -p "${STATE}"
	lock
	resolve_binaries_quietly
	daemon_stop dns
	daemon_stop kube-proxy
	if [[ -x "${KUBE_BIN}/kube-proxy" ]]; then
		"${KUBE_BIN}/kube-proxy" --cleanup >>"${LOGS}/kube-proxy.log" 2>&1 || true
	fi
	daemon_stop kubelet
	remove_containers
	daemon_stop containerd
	stop_shims
	daemon_stop holder
	remove_iptables
	if [[ "$(ip -o link show "${NODE_BRIDGE}" 2>/dev/null | sed -n 's/.* alias \(.*\)$/\1/p')" == "${STATE}" ]]; then
		ip link del "${NODE_BRIDGE}"
	fi
	remove_cgroups
	local d
	for d in "${MOUNTPOINTS[@]}"; do rmdir "${d}" 2>/dev/null || true; done
	# The pods' addresses: every container is gone, so are their leases.
	rm -rf "${STATE}/cni/ipam"
	RUN_DIR=${RUN_DIR} "${REPO_ROOT}/cluster/kube.sh" down
	cmd_check_gone
	if ${purge}; then
		# containerd's overlay snapshots hold files of any owner and mode.
		rm -rf "${STATE}"
		RUN_DIR=${RUN_DIR} "${REPO_ROOT}/cluster/kube.sh" down --purge
		log "purged ${STATE}"
	fi
}

cmd_status() {
	local rc=0
	daemon_status "${DAEMONS[@]}" || rc=3
	RUN_DIR=${RUN_DIR} KUBE_NODE=1 KUBE_ADDRESS=${NODE_ADDRESS} KUBE_SERVICE_CIDR=${SERVICE_CIDR} \
		"${REPO_ROOT}/cluster/kube.sh" status | sed 's/^/kube: /' || rc=3
	if ((rc == 0)); then
		resolve_binaries_quietly
		node_ready || rc=3
		kubectl_ get node "${NODE_NAME}" 2>/dev/null || true
	fi
	return "${rc}"
}

# cmd_sync_hosts writes the hosts file of the mount namespace: the machine's own lines, then
# <address> <name>.<namespace> <name>.<namespace>.svc <name>.<namespace>.svc.cluster.local
# for each Service: its ClusterIP, or for a headless one (Crossplane's function Services are)
# the ready addresses of its EndpointSlices, as cluster DNS answers. Written in place (a bind
# mount holds the file's inode) and only when it changed (Go's resolver re-reads on change).
cmd_sync_hosts() {
	resolve_binaries_quietly
	local services endpoints
	services=$(kubectl_ get services -A -o \
		jsonpath='{range .items[*]}{.spec.clusterIP} {.metadata.name}.{.metadata.namespace}{"\n"}{end}') ||
		die "cannot list Services"
	# shellcheck disable=SC2016 # a Go template, not a shell expansion
	endpoints=$(kubectl_ get endpointslices -A -o go-template='{{range .items}}{{$svc := index .metadata.labels "kubernetes.io/service-name"}}{{$ns := .metadata.namespace}}{{range .endpoints}}{{if .conditions.ready}}{{index .addresses 0}} {{$svc}}.{{$ns}}{{"\n"}}{{end}}{{end}}{{end}}') ||
		die "cannot list EndpointSlices"
	{
		cat /etc/hosts
		echo "# Services of the node's cluster, written by cluster/node.sh sync-hosts"
		awk '$1 ~ /^[0-9.]+$/ { print $1, $2, $2 ".svc", $2 ".svc.cluster.local" }' <<<"${services}"
		# Headless Services only: the others' endpoints are behind their ClusterIP.
		awk 'NR == FNR { if ($1 == "None") headless[$2] = 1; next }
			($2 in headless) { print $1, $2, $2 ".svc", $2 ".svc.cluster.local" }' \
			<(echo "${services}") <(echo "${endpoints}")
	} >"${STATE}/etc/hosts.new"
	cmp -s "${STATE}/etc/hosts.new" "${STATE}/etc/hosts" || cat "${STATE}/etc/hosts.new" >"${STATE}/etc/hosts"
	rm -f "${STATE}/etc/hosts.new"
}

# cmd_dns keeps the hosts file in step with the cluster: a sync at every change of an
# EndpointSlice (a Service is made, a Pod's address comes or goes).
cmd_dns() {
	resolve_binaries_quietly
	while :; do
		cmd_sync_hosts
		# A watch ends after a server-side timeout or when the apiserver restarts: sync again.
		kubectl_ --request-timeout=0 get endpointslices -A --watch-only -o name 2>/dev/null |
			while read -r _; do cmd_sync_hosts; done || true
		sleep 1
	done
}

watched_sysctls() {
	local k
	for k in "${WATCHED_SYSCTLS[@]}"; do echo "${k}=$(sysctl -n "${k}" 2>/dev/null || echo absent)"; done
}

# cmd_check_gone fails, listing what is left, unless down left the machine as it found it.
cmd_check_gone() {
	local left=() d h
	if [[ -f "${STATE}/sysctls.before" ]]; then
		local changed
		changed=$(diff <(cat "${STATE}/sysctls.before") <(watched_sysctls) | sed -n 's/^> //p' | tr '\n' ' ')
		[[ -z "${changed}" ]] || left+=("changed sysctls: ${changed}")
	fi
	local ipt
	for ipt in iptables-save ip6tables-save; do
		command -v "${ipt}" >/dev/null || continue
		"${ipt}" 2>/dev/null | grep -q 'KUBE-' && left+=("KUBE- chains or rules in ${ipt}")
	done
	ip link show "${NODE_BRIDGE}" >/dev/null 2>&1 && left+=("the bridge ${NODE_BRIDGE}")
	for d in "${MOUNTPOINTS[@]}"; do [[ -e "${d}" ]] && left+=("${d}"); done
	for h in /sys/fs/cgroup/*/"${NODE_CGROUP}"; do [[ -d "${h}" ]] && left+=("${h}"); done
	pgrep -f "${STATE}/" >/dev/null && left+=("processes running from ${STATE}: $(pgrep -f "${STATE}/" | tr '\n' ' ')")
	grep -q " ${STATE}/" /proc/mounts && left+=("mounts under ${STATE}")
	((${#left[@]} == 0)) || die "the node left behind: $(printf '%s; ' "${left[@]}")"
	log "nothing of the node is left on the machine"
}

main() {
	[[ $# -gt 0 ]] || usage
	local cmd=$1
	shift
	case "${cmd}" in
	up) cmd_up ;;
	down) cmd_down "$@" ;;
	status) cmd_status ;;
	import)
		[[ $# -eq 1 ]] || usage
		import_image "$1"
		;;
	nsenter) in_ns "$@" ;;
	pid) daemon_pid holder || die "the node is not up" ;;
	sync-hosts) cmd_sync_hosts ;;
	check-gone) cmd_check_gone ;;
	dns) cmd_dns ;;
	-h | --help | help) usage ;;
	*) usage ;;
	esac
}

main "$@"
