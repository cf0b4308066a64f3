# shellcheck shell=bash
# cluster/lib/ports.sh: free-port helpers shared by the cluster/ scripts (sourced, not run).
# The sourcing script defines die().

# port_free PORT succeeds when nothing listens on PORT (TCP, any address).
port_free() {
	[[ -z "$(ss -Htln "sport = :$1" 2>/dev/null)" ]]
}

# pick_port VAR stores in VAR a free port below the kernel's ephemeral range (32768+), so that
# outgoing connections of other processes cannot grab it between our choice and the bind. (Not
# echoed: PICKED, which keeps two choices of one run apart, must survive, so no subshell.)
pick_port() {
	local p i
	for ((i = 0; i < 200; i++)); do
		p=$((10000 + RANDOM % 22000))
		if port_free "${p}" && [[ " ${PICKED:-} " != *" ${p} "* ]]; then
			PICKED="${PICKED:-} ${p}"
			printf -v "$1" '%s' "${p}"
			return 0
		fi
	done
	die "no free port found"
}
