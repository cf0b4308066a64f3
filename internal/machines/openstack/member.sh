#!/bin/sh
# Written by provider-stackservices. etcd-member.service runs it at each start: it makes sure
# the member has its etcd release and, in a restored cluster, its data, then runs etcd (the
# arguments). A step that fails exits non-zero and the unit tries again; etcd never runs a
# release or a snapshot whose SHA-256 is not the one the provider gave.
set -eu
# What it writes (the release, the snapshot, the restored data) is root's alone.
umask 077
bin=$1
dir=${bin%/*}
log() { echo "etcd-member: $*" >&2; }

if [ ! -x "$bin" ] && [ -f /etc/etcd/release.env ]; then
	# shellcheck source=/dev/null # Written by the user-data.
	. /etc/etcd/release.env
	log "downloading etcd into $dir"
	[ -z "${dir%/*}" ] || mkdir -p "${dir%/*}"
	tmp=$(mktemp -d "$dir.download.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	curl --fail --silent --show-error --location --retry 5 --connect-timeout 10 \
		--output "$tmp/release.tar.gz" "$ETCD_RELEASE_URL"
	if ! echo "$ETCD_RELEASE_SHA256  $tmp/release.tar.gz" | sha256sum --check --status; then
		log "the release downloaded has another SHA-256 than the provider knows for it: not running it"
		exit 1
	fi
	mkdir "$tmp/release"
	tar -xzf "$tmp/release.tar.gz" -C "$tmp/release" --strip-components=1 --no-same-owner
	if [ ! -x "$tmp/release/${bin##*/}" ] || [ ! -x "$tmp/release/etcdutl" ]; then
		log "the release holds no ${bin##*/} and etcdutl at its top: not installing it"
		exit 1
	fi
	chmod 0755 "$tmp/release"
	rm -rf "$dir"
	mv "$tmp/release" "$dir"
	rm -rf "$tmp"
	trap - EXIT
fi

if [ ! -d /var/lib/etcd/member ] && [ -f /etc/etcd/restore.env ]; then
	# shellcheck source=/dev/null # Written by the user-data.
	. /etc/etcd/restore.env
	snap=/var/lib/etcd-restore.snapshot
	restoring=/var/lib/etcd-restoring
	rm -rf "$snap" "$restoring"
	log "downloading the snapshot to restore"
	curl --fail --silent --show-error --retry 5 --connect-timeout 10 --output "$snap" "$ETCD_RESTORE_URL"
	if [ "$(stat -c %s "$snap")" != "$ETCD_RESTORE_SIZE" ] ||
		! echo "$ETCD_RESTORE_SHA256  $snap" | sha256sum --check --status; then
		rm -f "$snap"
		log "the snapshot downloaded is not the backup the provider checked: not restoring it"
		exit 1
	fi
	# shellcheck disable=SC2086 # ETCD_RESTORE_BUMP is zero or two flags.
	"$dir/etcdutl" snapshot restore "$snap" --name="$ETCD_RESTORE_NAME" --data-dir="$restoring" \
		--initial-cluster="$ETCD_RESTORE_INITIAL_CLUSTER" \
		--initial-cluster-token="$ETCD_RESTORE_INITIAL_CLUSTER_TOKEN" \
		--initial-advertise-peer-urls="$ETCD_RESTORE_PEER_URL" $ETCD_RESTORE_BUMP
	chmod 0700 "$restoring"
	rm -rf /var/lib/etcd
	mv "$restoring" /var/lib/etcd
	rm -f "$snap" /etc/etcd/restore.env
	log "restored the snapshot"
else
	# Restored already (a start cut short after the data was in place): the URL goes.
	rm -f /etc/etcd/restore.env
fi

exec "$@"
