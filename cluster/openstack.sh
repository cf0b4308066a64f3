#!/usr/bin/env bash
# cluster/openstack.sh: a local OpenStack (Keystone, Neutron, Swift with its S3 API, Nova with
# Placement, Glance and RabbitMQ) for the integration tests.
#
# Usage: cluster/openstack.sh install | up | down [--purge] | purge | stop SERVICE | status | env
#
#   install  install the Debian packages (fast no-op when they are installed)
#   up       install, then start memcached, MariaDB, Keystone, Neutron, Swift (account,
#            container and object servers, proxy with s3api) and Nova (RabbitMQ, Placement,
#            Glance, API, conductor, scheduler, three nova-compute hosts with the fake driver
#            in two availability zones, and the test bed's hypervisor, which runs every ACTIVE
#            server for real) on 127.0.0.1, initialise databases, rings, the catalog, flavors,
#            image and zones on first use, wait until they answer, write
#            $RUN_DIR/openstack/env and clouds.yaml
#   down     stop what `up` started (by PID); data stays so the next `up` is fast
#   purge    down, then delete all state (same as `down --purge`)
#   stop     stop one service (memcached, mariadb, keystone, neutron, swift-account,
#            swift-container, swift-object, swift-proxy, or one of Nova's: see SERVICES), as an
#            outage would; `up` starts it again (the outage tests do both)
#   status   show what runs; exit 0 only when every service runs
#   env      print the path of the env file (source it for OS_*, NEUTRON_URL, SWIFT_URL,
#            S3_ENDPOINT, S3_REGION, NOVA_URL and the TESTBED_* names of flavors, image, zones)
#
# Everything (configs rendered from cluster/openstack/*, database, key repositories, Swift's
# rings and device, logs, PID files, sockets) lives under $RUN_DIR/openstack (RUN_DIR
# defaults to <repo>/.run). Nothing is written to /etc (Swift reads Debian's
# /etc/swift/swift.conf as shipped, for its hash path prefix/suffix and storage policy 0).
# Daemons are plain processes (no systemd here) started with setsid, so each one leads its
# own process group and `down` can stop it with its workers.
#
# Services are functions named <service>_<step> (memcached_start, keystone_init, ...), so a
# new service adds its own functions and a line in cmd_up/stop_all/SERVICES.
set -euo pipefail
# No job control, ever: background jobs then stay in our process group, so `setsid` execs
# the daemon itself (no extra fork) and $! is the daemon's PID.
set +m

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(dirname "$SCRIPT_DIR")
# shellcheck source=cluster/lib/daemon.sh
source "$REPO_ROOT/cluster/lib/daemon.sh"
TEMPLATE_DIR=$SCRIPT_DIR/openstack
# Absolute: the daemons get these paths in their configs and run from another directory.
RUN_DIR=$(realpath -m "${RUN_DIR:-$REPO_ROOT/.run}")
STATE_DIR=$RUN_DIR/openstack
ETC_DIR=$STATE_DIR/etc
LOG_DIR=$STATE_DIR/log
PID_DIR=$STATE_DIR/run
LOG_PREFIX=openstack
DB_DIR=$STATE_DIR/mysql
DB_SOCKET=$PID_DIR/mysqld.sock
ENV_FILE=$STATE_DIR/env
CLOUDS_FILE=$STATE_DIR/clouds.yaml
# Written once the databases and the catalog are complete. Without it, state is partial
# (an interrupted first `up`) and is rebuilt from scratch.
INIT_MARKER=$STATE_DIR/.initialised
# Written into the marker. Bump it when the state a fresh `up` creates changes (databases,
# catalog, rings): state of another version is rebuilt from scratch.
# 2: Swift (rings, user swift, object-store endpoints, check credential) and user demo2.
# 3: Nova, Placement, Glance (databases, users, endpoints, flavors, image, zones) and the
#    Neutron agent rows of the compute hosts.
# 4: Cinder (database, user, endpoints), so that servers boot from volumes; the flavor whose
#    first server of a group stays in BUILD.
# 5: the network and subnet etcd-members of project demo, where the examples' etcd servers go.
STATE_VERSION=5
LOCK_FILE=$RUN_DIR/.openstack.lock

HOST=127.0.0.1
MEMCACHED_PORT=11211
MARIADB_PORT=3306
KEYSTONE_PORT=5000
NEUTRON_PORT=9696
SWIFT_PROXY_PORT=8080
# The host's services as the servers see them (cluster/hypervisor/services.go): the address
# is the host's own, outside the servers' range, and only servers are routed to it.
SERVICES_ADDRESS=198.18.0.1
MIRROR_PORT=8000
SWIFT_ACCOUNT_PORT=6202
SWIFT_CONTAINER_PORT=6201
SWIFT_OBJECT_PORT=6200
NOVA_PORT=8774
PLACEMENT_PORT=8778
GLANCE_PORT=9292
CINDER_PORT=8776
RABBIT_PORT=5672
RABBIT_DIST_PORT=25672
EPMD_PORT=4369
KEYSTONE_URL=http://$HOST:$KEYSTONE_PORT/v3
NEUTRON_URL=http://$HOST:$NEUTRON_PORT
SWIFT_URL=http://$HOST:$SWIFT_PROXY_PORT
NOVA_URL=http://$HOST:$NOVA_PORT/v2.1
PLACEMENT_URL=http://$HOST:$PLACEMENT_PORT
GLANCE_URL=http://$HOST:$GLANCE_PORT
CINDER_URL=http://$HOST:$CINDER_PORT
REGION=RegionOne
# s3api's `location`: S3 clients must sign for this region (not Keystone's RegionOne).
S3_REGION=us-east-1
# Rings, builder files and the device directory (devices/d1) of the Swift servers.
SWIFT_DIR=$STATE_DIR/swift

# Test-bed credentials (loopback only).
ADMIN_PASSWORD="admin"
DEMO_PASSWORD="demo"
NEUTRON_PASSWORD="neutron"
SWIFT_PASSWORD="swift"
DEMO2_PASSWORD="demo2"
NOVA_PASSWORD="nova"
PLACEMENT_PASSWORD="placement"
GLANCE_PASSWORD="glance"
CINDER_PASSWORD="cinder"
# An EC2 credential of user swift (project service), made with the catalog, for the S3
# readiness check (s3api, s3token, Keystone, keystoneauth and the account server all take
# part). Tests should make their own credentials.
SWIFT_CHECK_ACCESS="testbed-readiness-check"
SWIFT_CHECK_SECRET="testbed-readiness-secret"
DB_PASSWORD="stackdb"

# Start-up budgets in seconds (generous: the machine may be busy compiling).
KEYSTONE_TIMEOUT=${OPENSTACK_KEYSTONE_TIMEOUT:-180}
NEUTRON_TIMEOUT=${OPENSTACK_NEUTRON_TIMEOUT:-240}
SWIFT_TIMEOUT=${OPENSTACK_SWIFT_TIMEOUT:-180}
NOVA_TIMEOUT=${OPENSTACK_NOVA_TIMEOUT:-240}

PACKAGES=(
  keystone python3-openstackclient neutron-server memcached
  uwsgi-core uwsgi-plugin-python3 mariadb-server mariadb-client python3-pymysql curl
  swift swift-proxy swift-account swift-container swift-object python3-keystonemiddleware
  # Nova without the nova-compute package (it pulls libvirt and QEMU): nova-compute runs
  # from python3-nova with the fake driver.
  rabbitmq-server placement-api glance-api nova-api nova-conductor nova-scheduler python3-nova
  # Cinder without its daemons' packages (cinder-volume pulls LVM and iSCSI tools): API,
  # scheduler and volume service run from python3-cinder, with a driver that keeps volumes
  # in the database only (cluster/openstack/cinder_testbed_driver.py).
  python3-cinder
)

# The OpenStack tools are Debian's Python programs: call them by absolute path with Debian's
# /usr/bin/python3 first on PATH (the PATH python here is pyenv's, without these modules),
# and keep the caller's OS_* variables away from keystone-manage and the openstack client.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:$PATH
unset PYTHONPATH PYTHONHOME
while IFS= read -r var; do unset "$var"; done < <(compgen -e | grep '^OS_' || true)

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------------------------------
# Processes: PID files, start, stop
# ---------------------------------------------------------------------------------------

# Each service's process is recognised by a word of its command line, so a stale PID file
# (e.g. after a reboot, the PID now belongs to something else) is never mistaken for ours.
proc_pattern() {
  case $1 in
    memcached) echo memcached ;;
    mariadb) echo mariadbd ;;
    keystone) echo uwsgi ;;
    neutron) echo neutron-server ;;
    swift-account | swift-container | swift-object | swift-proxy) echo "$1-server" ;;
    epmd) echo "epmd" ;;
    rabbitmq) echo rabbitmq-server ;;
    placement) echo placement-uwsgi.ini ;;
    glance) echo glance-api ;;
    nova-api) echo nova-api-uwsgi.ini ;;
    nova-conductor | nova-scheduler) echo "$1" ;;
    nova-compute-*) echo "$1.conf" ;;
    cinder-api | cinder-scheduler | cinder-volume) echo "cinder.cmd.${1#cinder-}" ;;
    hypervisor) echo "hypervisor run" ;;
    *) die "unknown service $1" ;;
  esac
}

# pid_of SERVICE: print the PID of the running service, fail if it does not run.
pid_of() { daemon_pid "$1"; }

running() { daemon_running "$1"; }

# port_busy PORT: true when something accepts connections on 127.0.0.1:PORT.
port_busy() { (: <"/dev/tcp/$HOST/$1") 2>/dev/null; }

# start_daemon SERVICE PORT LOGFILE COMMAND...: run COMMAND as the daemon SERVICE (lib/daemon.sh),
# recognised by proc_pattern's word of its command line. The command must stay in the
# foreground (no self-daemonising). PORT is the port it will listen on, which must be free ("-"
# for a service that listens on none).
start_daemon() {
  local svc=$1 port=$2 logfile=$3
  shift 3
  reap_orphans "$svc"
  if [[ $port != - ]] && port_busy "$port"; then
    ss -ltnp "sport = :$port" >&2 2>/dev/null || true
    die "$svc: port $HOST:$port is already in use by a process this script did not start"
  fi
  DAEMON_MATCH=$(proc_pattern "$svc") daemon_start "$svc" "$logfile" "$@"
  running "$svc" || die "$svc exited at once" "$logfile"
}

# reap_orphans SERVICE: when a service's main process died (KILL, crash), its workers may
# live on and hold the port. Kill them: members of the recorded process group that run
# from our state dir (so a PID reused after a reboot never matches).
reap_orphans() {
  local pidfile pgid pid
  pidfile=$(daemon_pid_file "$1")
  [[ -f $pidfile ]] || return 0
  read -r pgid _ <"$pidfile" || true
  [[ $pgid =~ ^[0-9]+$ ]] || return 0
  for pid in $(ps -eo pid=,pgid= | awk -v g="$pgid" '$2 == g { print $1 }'); do
    [[ $(cmdline_of "$pid") == *"$STATE_DIR"* ]] || continue
    log "killing pid $pid, left over from an earlier $1"
    kill -KILL "$pid" 2>/dev/null || true
  done
}

# stop_service SERVICE [TIMEOUT]: stop the service's process group (lib/daemon.sh), and any
# workers a dead one left.
stop_service() {
  running "$1" || reap_orphans "$1"
  daemon_stop "$1" "${2:-30}"
}

# http_code URL [CURL ARGS...]: print the HTTP status of a GET (000 when nothing answers).
http_code() {
  local url=$1
  shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$url" || true
}

# wait_until SERVICE TIMEOUT DESCRIPTION LOGFILE COMMAND...: poll COMMAND until it succeeds;
# fail with the log tail if the service's process exits or the time runs out.
wait_until() {
  local svc=$1 timeout=$2 what=$3 logfile=$4 deadline
  shift 4
  deadline=$((SECONDS + timeout))
  until "$@"; do
    running "$svc" || die "$svc exited before $what" "$logfile"
    ((SECONDS < deadline)) || die "$svc: no $what after ${timeout}s" "$logfile"
    sleep 0.25
  done
}

http_ok() { [[ $(http_code "$1") == 200 ]]; }

# ---------------------------------------------------------------------------------------
# install
# ---------------------------------------------------------------------------------------

missing_packages() {
  local installed
  installed=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${PACKAGES[@]}" 2>/dev/null |
    awk '$1 == "ii" { print $2 }' || true)
  local p
  for p in "${PACKAGES[@]}"; do
    grep -qx -- "$p" <<<"$installed" || echo "$p"
  done
}

# Without a policy-rc.d that denies, the packages' postinst scripts start memcached, MariaDB,
# Keystone, Neutron and Swift with Debian's configs, listening on all interfaces and holding
# the ports this test bed needs.
ensure_policy_rc_d() {
  local f=/usr/sbin/policy-rc.d
  if [[ -x $f ]] && grep -q 'exit 101' "$f"; then return 0; fi
  [[ -e $f ]] && cp -p "$f" "$f.before-openstack-sh"
  printf '#!/bin/sh\n# Written by cluster/openstack.sh: packages must not start daemons.\nexit 101\n' >"$f"
  chmod 755 "$f"
}

# The PIDs of processes the packages could start (by executable name, which ps cuts at 15
# characters: hence neutron-.* and swift-.*).
package_daemon_pids() {
  ps -eo pid=,comm= | awk '$2 ~ /^(memcached|mariadbd|mysqld|mysqld_safe|mariadbd-safe|uwsgi|keystone|neutron-.*|swift-.*|nova-.*|glance-.*|placement-.*|beam.smp|epmd|rabbitmq-.*)$/ { print $1 }' | sort
}

# Stop daemons that appeared during the installation (a policy-rc.d that did not work):
# only PIDs that did not exist before apt-get ran and do not run from our state dir.
stop_package_daemons() {
  local before=$1 pid cmdline
  for pid in $(comm -13 <(printf '%s\n' "$before") <(package_daemon_pids)); do
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
    [[ $cmdline == *"$STATE_DIR"* ]] && continue
    log "stopping pid $pid ($cmdline), started by a package postinst"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

cmd_install() {
  local missing before t0
  missing=$(missing_packages)
  [[ -z $missing ]] && return 0
  t0=$(now)
  # shellcheck disable=SC2086 # word splitting of the package list is intended
  log "installing packages:" $missing
  [[ $(id -u) == 0 ]] || die "installing packages needs root"
  ensure_policy_rc_d
  before=$(package_daemon_pids)
  local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -q -o Dpkg::Use-Pty=0)
  "${apt[@]}" update >&2
  # shellcheck disable=SC2086
  if ! "${apt[@]}" install -y --no-install-recommends $missing >&2; then
    # A mirror hiccup (or a parallel apt run) fails a download now and then: retry once.
    log "apt-get install failed, retrying once"
    "${apt[@]}" update >&2
    # shellcheck disable=SC2086
    "${apt[@]}" install -y --no-install-recommends $missing >&2 || die "apt-get install failed"
  fi
  stop_package_daemons "$before"
  missing=$(missing_packages)
  [[ -z $missing ]] || die "packages still missing after install: $missing"
  log "packages installed in $(elapsed "$t0")s"
}

# ---------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------

# render TEMPLATE: write $ETC_DIR/TEMPLATE with the @VARS@ of cluster/openstack/TEMPLATE set.
render() {
  sed -e "s|@STATE_DIR@|$STATE_DIR|g" \
    -e "s|@ETC_DIR@|$ETC_DIR|g" \
    -e "s|@LOG_DIR@|$LOG_DIR|g" \
    -e "s|@DB_SOCKET@|$DB_SOCKET|g" \
    -e "s|@DB_PASSWORD@|$DB_PASSWORD|g" \
    -e "s|@MEMCACHED@|$HOST:$MEMCACHED_PORT|g" \
    -e "s|@KEYSTONE_HOST@|$HOST|g" \
    -e "s|@KEYSTONE_PORT@|$KEYSTONE_PORT|g" \
    -e "s|@KEYSTONE_URL@|http://$HOST:$KEYSTONE_PORT|g" \
    -e "s|@NEUTRON_HOST@|$HOST|g" \
    -e "s|@NEUTRON_PORT@|$NEUTRON_PORT|g" \
    -e "s|@NEUTRON_PASSWORD@|$NEUTRON_PASSWORD|g" \
    -e "s|@SWIFT_HOST@|$HOST|g" \
    -e "s|@SWIFT_DIR@|$SWIFT_DIR|g" \
    -e "s|@SWIFT_PROXY_PORT@|$SWIFT_PROXY_PORT|g" \
    -e "s|@SWIFT_ACCOUNT_PORT@|$SWIFT_ACCOUNT_PORT|g" \
    -e "s|@SWIFT_CONTAINER_PORT@|$SWIFT_CONTAINER_PORT|g" \
    -e "s|@SWIFT_OBJECT_PORT@|$SWIFT_OBJECT_PORT|g" \
    -e "s|@SWIFT_PASSWORD@|$SWIFT_PASSWORD|g" \
    -e "s|@S3_REGION@|$S3_REGION|g" \
    -e "s|@NOVA_PORT@|$NOVA_PORT|g" \
    -e "s|@NOVA_PASSWORD@|$NOVA_PASSWORD|g" \
    -e "s|@PLACEMENT_PORT@|$PLACEMENT_PORT|g" \
    -e "s|@PLACEMENT_PASSWORD@|$PLACEMENT_PASSWORD|g" \
    -e "s|@GLANCE_PORT@|$GLANCE_PORT|g" \
    -e "s|@GLANCE_PASSWORD@|$GLANCE_PASSWORD|g" \
    -e "s|@CINDER_PORT@|$CINDER_PORT|g" \
    -e "s|@CINDER_PASSWORD@|$CINDER_PASSWORD|g" \
    -e "s|@RABBIT_PORT@|$RABBIT_PORT|g" \
    "$TEMPLATE_DIR/$1" >"$ETC_DIR/$1.tmp"
  mv "$ETC_DIR/$1.tmp" "$ETC_DIR/$1"
}

render_configs() {
  local t
  for t in keystone.conf keystone-uwsgi.ini neutron.conf ml2_conf.ini \
    swift-account-server.conf swift-container-server.conf swift-object-server.conf \
    swift-proxy-server.conf nova.conf nova-api-uwsgi.ini placement.conf placement-uwsgi.ini \
    glance-api.conf rabbitmq.conf cinder.conf cinder-api-paste.ini cinder-resource-filters.json; do
    render "$t"
  done
  nova_compute_configs
  # nova-api-wsgi loads its paste pipeline from its config dir.
  cp /etc/nova/api-paste.ini "$ETC_DIR/api-paste.ini"
}

write_client_files() {
  cat >"$ENV_FILE.tmp" <<EOF
# Written by cluster/openstack.sh: the local OpenStack test bed.
export OS_AUTH_URL=$KEYSTONE_URL
export OS_REGION_NAME=$REGION
export OS_IDENTITY_API_VERSION=3
export OS_USER_DOMAIN_NAME=Default
export OS_PROJECT_DOMAIN_NAME=Default
export OS_ADMIN_USERNAME=admin
export OS_ADMIN_PASSWORD=$ADMIN_PASSWORD
export OS_ADMIN_PROJECT_NAME=admin
export OS_DEMO_USERNAME=demo
export OS_DEMO_PASSWORD=$DEMO_PASSWORD
export OS_DEMO_PROJECT_NAME=demo
export OS_DEMO2_USERNAME=demo2
export OS_DEMO2_PASSWORD=$DEMO2_PASSWORD
export OS_DEMO2_PROJECT_NAME=demo2
export NEUTRON_URL=$NEUTRON_URL
export SWIFT_URL=$SWIFT_URL
export S3_ENDPOINT=$SWIFT_URL
export S3_REGION=$S3_REGION
export OS_CLIENT_CONFIG_FILE=$CLOUDS_FILE
export NOVA_URL=$NOVA_URL
export CINDER_URL=$CINDER_URL
# What the test bed's Nova offers: flavors, the image (the servers' root file system is
# the host's, with the etcd releases cluster/tools.sh built under /opt/etcd/<version>/),
# the availability zones and the compute hosts in each.
export TESTBED_FLAVOR_SMALL=$FLAVOR_SMALL
export TESTBED_FLAVOR_LARGE=$FLAVOR_LARGE
# The first server of each server group of this flavor stays in BUILD until deleted.
export TESTBED_FLAVOR_STUCK=$FLAVOR_STUCK
export TESTBED_IMAGE=$IMAGE_NAME
export TESTBED_ETCD_PATH_TEMPLATE=/opt/etcd/v{version}/etcd
export TESTBED_ZONES="${ZONES[*]}"
export TESTBED_HOSTS="${COMPUTE_HOSTS[*]}"
# The addresses servers may have: the hypervisor puts only these on the host.
export TESTBED_SERVER_RANGE=198.19.0.0/16
# Where servers reach the host's services: a mirror of etcd releases (the provider knows
# their SHA-256 from TESTBED_ETCD_SHA256SUMS) and Swift's S3 API (the endpoint a backup to
# restore onto servers must be written through, so that its pre-signed URL reaches Swift).
export TESTBED_SERVICES_ADDRESS=$SERVICES_ADDRESS
export TESTBED_ETCD_RELEASE_URL_TEMPLATE=http://$SERVICES_ADDRESS:$MIRROR_PORT/v{version}/etcd-v{version}-linux-amd64.tar.gz
export TESTBED_ETCD_SHA256SUMS=$("$SCRIPT_DIR/tools.sh" path etcd-release)/SHA256SUMS
export TESTBED_S3_ENDPOINT_FOR_SERVERS=http://$SERVICES_ADDRESS:$SWIFT_PROXY_PORT
export HYPERVISOR_STATE=$STATE_DIR/hypervisor
export HYPERVISOR_LOG=$LOG_DIR/hypervisor.log
EOF
  mv "$ENV_FILE.tmp" "$ENV_FILE"
  local cloud user password
  {
    echo "# Written by cluster/openstack.sh: the local OpenStack test bed."
    echo "clouds:"
    for cloud in admin demo demo2; do
      user=$cloud
      case $cloud in
        admin) password=$ADMIN_PASSWORD ;;
        demo) password=$DEMO_PASSWORD ;;
        demo2) password=$DEMO2_PASSWORD ;;
      esac
      cat <<EOF
  $cloud:
    auth:
      auth_url: $KEYSTONE_URL
      username: $user
      password: $password
      project_name: $cloud
      user_domain_name: Default
      project_domain_name: Default
    region_name: $REGION
    interface: public
    identity_api_version: 3
EOF
    done
  } >"$CLOUDS_FILE.tmp"
  mv "$CLOUDS_FILE.tmp" "$CLOUDS_FILE"
}

# ---------------------------------------------------------------------------------------
# memcached: Keystone's cache and keystonemiddleware's token cache. Started first because
# keystone-manage already talks to it.
# ---------------------------------------------------------------------------------------

memcached_start() {
  running memcached && return 0
  start_daemon memcached "$MEMCACHED_PORT" "$LOG_DIR/memcached.log" \
    /usr/bin/memcached -u root -l "$HOST" -p "$MEMCACHED_PORT" -U 0 -m 128 -c 1024
  wait_until memcached 10 "listening port" "$LOG_DIR/memcached.log" port_busy "$MEMCACHED_PORT"
}

# ---------------------------------------------------------------------------------------
# MariaDB, not SQLite: Neutron on SQLite fails with "database is locked" under parallel tests
# and its migrations ALTER constraints, which SQLite cannot do.
# ---------------------------------------------------------------------------------------

# mariadb_sql: run the SQL on stdin as the database root (unix-socket auth as OS root).
mariadb_sql() { /usr/bin/mariadb --no-defaults --socket="$DB_SOCKET" -u root; }

mariadb_init() {
  rm -rf "$DB_DIR"
  mkdir -p "$DB_DIR"
  /usr/bin/mariadb-install-db --no-defaults --datadir="$DB_DIR" --user=root \
    --auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \
    >"$LOG_DIR/mariadb-install-db.log" 2>&1 ||
    die "mariadb-install-db failed" "$LOG_DIR/mariadb-install-db.log"
}

mariadb_start() {
  running mariadb && return 0
  # --no-defaults: ignore /etc/mysql. Binary log off and a relaxed flush: the data is
  # disposable and migrations run much faster.
  start_daemon mariadb "$MARIADB_PORT" "$LOG_DIR/mariadb.log" \
    /usr/sbin/mariadbd --no-defaults --user=root --datadir="$DB_DIR" \
    --bind-address="$HOST" --port="$MARIADB_PORT" --socket="$DB_SOCKET" \
    --pid-file="$PID_DIR/mariadbd.pid" --log-error="$LOG_DIR/mariadb.log" \
    --skip-log-bin --innodb-flush-log-at-trx-commit=2 --skip-name-resolve \
    --max-connections=1000
  wait_until mariadb 60 "answer on $DB_SOCKET" "$LOG_DIR/mariadb.log" mariadb_ping
}

mariadb_ping() {
  /usr/bin/mariadb-admin --no-defaults --socket="$DB_SOCKET" -u root --silent ping >/dev/null 2>&1
}

# mariadb_create_db NAME: a database and a user of the same name (password $DB_PASSWORD).
mariadb_create_db() {
  mariadb_sql <<EOF
DROP DATABASE IF EXISTS $1;
CREATE DATABASE $1 CHARACTER SET utf8;
CREATE OR REPLACE USER '$1'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL PRIVILEGES ON $1.* TO '$1'@'localhost';
EOF
}

# ---------------------------------------------------------------------------------------
# Keystone under uwsgi (2 processes, 1 thread), fernet tokens, cache on memcached.
# ---------------------------------------------------------------------------------------

keystone_manage() { /usr/bin/keystone-manage --config-file "$ETC_DIR/keystone.conf" "$@"; }

keystone_init() {
  local logf=$LOG_DIR/keystone-manage.log
  mariadb_create_db keystone
  # The key repositories of fernet_setup, receipt_setup and credential_setup (credential
  # keys are required for EC2 credentials). Each keystone-manage run spends 5-15 s of CPU
  # importing keystone on this busy machine, so write what those commands write instead:
  # a primary key "1" and a staged key "0", each a url-safe base64 encoding of 32 random
  # bytes (cryptography's Fernet.generate_key), in a 0700 directory.
  local dir
  for dir in fernet-keys fernet-receipts credential-keys; do
    keystone_key_repository "$STATE_DIR/keystone/$dir"
  done
  keystone_manage db_sync >>"$logf" 2>&1 ||
    die "keystone-manage db_sync failed" "$logf" "$LOG_DIR/keystone.log"
  keystone_manage bootstrap \
    --bootstrap-username admin --bootstrap-password "$ADMIN_PASSWORD" \
    --bootstrap-project-name admin --bootstrap-role-name admin \
    --bootstrap-service-name keystone --bootstrap-region-id "$REGION" \
    --bootstrap-admin-url "$KEYSTONE_URL" --bootstrap-internal-url "$KEYSTONE_URL" \
    --bootstrap-public-url "$KEYSTONE_URL" >>"$logf" 2>&1 ||
    die "keystone-manage bootstrap failed" "$logf" "$LOG_DIR/keystone.log"
}

# keystone_key_repository DIR: a fresh Fernet key repository, as `keystone-manage
# fernet_setup` leaves it.
keystone_key_repository() {
  local key
  rm -rf "$1"
  mkdir -p "$1"
  chmod 700 "$1"
  for key in 0 1; do
    (umask 077 && head -c 32 /dev/urandom | base64 -w 0 | tr '+/' '-_' >"$1/$key")
  done
}

keystone_start() {
  running keystone && return 0
  start_daemon keystone "$KEYSTONE_PORT" "$LOG_DIR/keystone-uwsgi.log" \
    /usr/bin/uwsgi --ini "$ETC_DIR/keystone-uwsgi.ini"
}

keystone_wait() {
  wait_until keystone "$KEYSTONE_TIMEOUT" "200 on GET $KEYSTONE_URL" \
    "$LOG_DIR/keystone-uwsgi.log" http_ok "$KEYSTONE_URL"
}

# The catalog beyond `keystone-manage bootstrap`, as commands for one `openstack` process
# reading stdin (one process per command costs about 2 s of start-up each). That shell
# (cmd2) strips every quote character, even inside an argument; no argument may contain a
# space, and a literal " must be written \" inside '...'. Each service that needs users
# or endpoints prints its commands in its own <service>_catalog function.
# (bootstrap already made the roles admin, member and reader.)
keystone_catalog() {
  cat <<EOF
project create --domain default --or-show service
project create --domain default --or-show demo
role create --or-show service
user create --domain default --password $DEMO_PASSWORD --or-show demo
role add --project demo --user demo member
project create --domain default --or-show demo2
user create --domain default --password $DEMO2_PASSWORD --or-show demo2
role add --project demo2 --user demo2 member
EOF
}

neutron_catalog() {
  cat <<EOF
user create --domain default --password $NEUTRON_PASSWORD --or-show neutron
role add --project service --user neutron admin
role add --project service --user neutron service
service create --name neutron network
endpoint create --region $REGION network public $NEUTRON_URL
endpoint create --region $REGION network internal $NEUTRON_URL
endpoint create --region $REGION network admin $NEUTRON_URL
EOF
}

# Swift: its service user (keystonemiddleware and s3token authenticate as swift), the
# reseller role of keystoneauth, the object-store endpoints and the readiness-check EC2
# credential (a JSON blob; see above for the quoting).
swift_catalog() {
  local iface q='\"'
  cat <<EOF
role create --or-show ResellerAdmin
user create --domain default --password $SWIFT_PASSWORD --or-show swift
role add --project service --user swift admin
role add --project service --user swift service
service create --name swift object-store
EOF
  for iface in public internal admin; do
    echo "endpoint create --region $REGION object-store $iface $SWIFT_URL/v1/AUTH_%(project_id)s"
  done
  echo "credential create --type ec2 --project service swift '{${q}access${q}:${q}$SWIFT_CHECK_ACCESS${q},${q}secret${q}:${q}$SWIFT_CHECK_SECRET${q}}'"
}

# auth USER PASSWORD PROJECT [CURL ARGS...]: POST a password auth scoped to the project.
auth() {
  local body
  body="{\"auth\":{\"identity\":{\"methods\":[\"password\"],\"password\":{\"user\":{\"name\":\"$1\",\"domain\":{\"name\":\"Default\"},\"password\":\"$2\"}}},\"scope\":{\"project\":{\"name\":\"$3\",\"domain\":{\"name\":\"Default\"}}}}}"
  shift 3
  curl -s --max-time 10 -H 'Content-Type: application/json' -d "$body" "$@" \
    "$KEYSTONE_URL/auth/tokens" || true
}

# token USER PASSWORD PROJECT: print a project-scoped token (empty when refused).
token() {
  auth "$@" -D - -o /dev/null | awk 'tolower($1) == "x-subject-token:" { print $2 }' | tr -d '\r'
}

# openstack_admin: one `openstack` process, as admin, running the commands on stdin.
openstack_admin() {
  env OS_AUTH_URL="$KEYSTONE_URL" OS_IDENTITY_API_VERSION=3 OS_REGION_NAME="$REGION" \
    OS_USERNAME=admin OS_PASSWORD="$ADMIN_PASSWORD" OS_PROJECT_NAME=admin \
    OS_USER_DOMAIN_NAME=Default OS_PROJECT_DOMAIN_NAME=Default /usr/bin/openstack
}

catalog_init() {
  local logf=$LOG_DIR/catalog.log
  {
    keystone_catalog
    neutron_catalog
    swift_catalog
    nova_catalog
  } | openstack_admin >"$logf" 2>&1 || die "creating the catalog failed" "$logf"
  # The interactive client goes on after a failed command: check the result.
  [[ -n $(token neutron "$NEUTRON_PASSWORD" service) ]] ||
    die "catalog incomplete: user neutron cannot log in to project service" "$logf"
  [[ -n $(token swift "$SWIFT_PASSWORD" service) ]] ||
    die "catalog incomplete: user swift cannot log in to project service" "$logf"
  [[ -n $(token demo2 "$DEMO2_PASSWORD" demo2) ]] ||
    die "catalog incomplete: user demo2 cannot log in to project demo2" "$logf"
  [[ -n $(token nova "$NOVA_PASSWORD" service) ]] ||
    die "catalog incomplete: user nova cannot log in to project service" "$logf"
  # Clients find Neutron and Swift through the catalog of the token.
  local body
  body=$(auth demo "$DEMO_PASSWORD" demo)
  grep -q '"type": *"network"' <<<"$body" ||
    die "catalog incomplete: user demo gets no token or no network endpoint" "$logf"
  grep -q '"type": *"object-store"' <<<"$body" ||
    die "catalog incomplete: user demo gets no object-store endpoint" "$logf"
}

# ---------------------------------------------------------------------------------------
# Neutron: API server only, ML2 without agents, no message bus.
# ---------------------------------------------------------------------------------------

neutron_init() {
  local logf=$LOG_DIR/neutron-db-manage.log
  mariadb_create_db neutron
  /usr/bin/neutron-db-manage --config-file "$ETC_DIR/neutron.conf" \
    --config-file "$ETC_DIR/ml2_conf.ini" upgrade head >"$logf" 2>&1 ||
    die "neutron-db-manage upgrade head failed" "$logf"
}

neutron_start() {
  running neutron && return 0
  mkdir -p "$STATE_DIR/neutron/lock"
  start_daemon neutron "$NEUTRON_PORT" "$LOG_DIR/neutron-server.out" \
    /usr/bin/neutron-server --config-file "$ETC_DIR/neutron.conf" \
    --config-file "$ETC_DIR/ml2_conf.ini"
}

neutron_wait() {
  wait_until neutron "$NEUTRON_TIMEOUT" "200 on GET $NEUTRON_URL/" \
    "$LOG_DIR/neutron-server.log" http_ok "$NEUTRON_URL/"
}

# The end-to-end check: the demo user lists security groups through Neutron (Keystone,
# keystonemiddleware's service user, the database and the ML2 plugin all take part).
neutron_api_ok() {
  local tok
  tok=$(token demo "$DEMO_PASSWORD" demo)
  [[ -n $tok ]] && [[ $(http_code "$NEUTRON_URL/v2.0/security-groups" -H "X-Auth-Token: $tok") == 200 ]]
}

# ---------------------------------------------------------------------------------------
# Swift: account, container and object servers on one device directory with one replica
# (no replicators, auditors or updaters), and the proxy with s3api/s3token on Keystone.
# Each server is a single process (workers = 0) logging to stderr (--verbose: there is no
# syslog here).
# ---------------------------------------------------------------------------------------

SWIFT_STORAGE=(account container object)
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855

swift_port() {
  case $1 in
    account) echo "$SWIFT_ACCOUNT_PORT" ;;
    container) echo "$SWIFT_CONTAINER_PORT" ;;
    object) echo "$SWIFT_OBJECT_PORT" ;;
    proxy) echo "$SWIFT_PROXY_PORT" ;;
  esac
}

# swift_ring KIND: build KIND.builder and KIND.ring.gz in $SWIFT_DIR with the one device.
swift_ring() {
  local builder=$SWIFT_DIR/$1.builder
  /usr/bin/swift-ring-builder "$builder" create 8 1 1 &&
    /usr/bin/swift-ring-builder "$builder" add --region 1 --zone 1 --ip "$HOST" \
      --port "$(swift_port "$1")" --device d1 --weight 100 &&
    /usr/bin/swift-ring-builder "$builder" rebalance
}

swift_init() {
  local logf=$LOG_DIR/swift-rings.log kind pids=() rc=0
  rm -rf "$SWIFT_DIR"
  mkdir -p "$SWIFT_DIR/devices/d1" "$SWIFT_DIR/recon"
  # The object server keeps metadata in user xattrs (ext4 has them; tmpfs only on kernels
  # >= 6.6): fail here rather than with 507s on the first upload.
  /usr/bin/python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.swift.probe", b"1")' \
    "$SWIFT_DIR/devices/d1" 2>>"$logf" ||
    die "$SWIFT_DIR has no user xattrs (needed by Swift): put RUN_DIR on ext4 or xfs" "$logf"
  # About 1.5 s of CPU per ring: build the three side by side.
  for kind in "${SWIFT_STORAGE[@]}"; do
    swift_ring "$kind" >>"$logf" 2>&1 &
    pids+=($!)
  done
  for kind in "${pids[@]}"; do wait "$kind" || rc=1; done
  ((rc == 0)) || die "swift-ring-builder failed" "$logf"
}

swift_start() {
  local kind
  for kind in "${SWIFT_STORAGE[@]}" proxy; do
    running "swift-$kind" && continue
    start_daemon "swift-$kind" "$(swift_port "$kind")" "$LOG_DIR/swift-$kind-server.log" \
      "/usr/bin/swift-$kind-server" "$ETC_DIR/swift-$kind-server.conf" --verbose
  done
}

swift_healthcheck_url() { echo "http://$HOST:$(swift_port "$1")/healthcheck"; }

swift_wait() {
  local kind
  for kind in "${SWIFT_STORAGE[@]}" proxy; do
    wait_until "swift-$kind" "$SWIFT_TIMEOUT" "200 on GET $(swift_healthcheck_url "$kind")" \
      "$LOG_DIR/swift-$kind-server.log" http_ok "$(swift_healthcheck_url "$kind")"
  done
}

# The end-to-end check: an S3 ListBuckets signed (SigV4) with the readiness-check EC2
# credential of user swift (s3api, s3token, Keystone, keystoneauth and the account server
# all take part). s3api requires x-amz-content-sha256, which curl's --aws-sigv4 does not
# send by itself: give the hash of the empty body.
swift_api_ok() {
  [[ $(http_code "$SWIFT_URL/" --aws-sigv4 "aws:amz:$S3_REGION:s3" \
    --user "$SWIFT_CHECK_ACCESS:$SWIFT_CHECK_SECRET" \
    -H "x-amz-content-sha256: $EMPTY_SHA256") == 200 ]]
}

# ---------------------------------------------------------------------------------------
# Nova: RabbitMQ (its RPC), Placement, Glance, the compute API under uwsgi, conductor,
# scheduler and three nova-compute processes with the fake driver, as three hosts in two
# availability zones. The fake driver only keeps records: the hypervisor (cluster/hypervisor)
# runs every ACTIVE server for real, in a network namespace holding its port's fixed IP.
# Neutron binds the servers' ports with its openvswitch driver on hosts that have an "Open
# vSwitch agent" row (written here, alive forever; no agent process runs).
# ---------------------------------------------------------------------------------------

COMPUTE_HOSTS=(compute-1 compute-2 compute-3)
ZONES=(az-1 az-2)
# compute_zone HOST: the availability zone of a compute host.
compute_zone() {
  case $1 in
    compute-1 | compute-2) echo "${ZONES[0]}" ;;
    *) echo "${ZONES[1]}" ;;
  esac
}
FLAVOR_SMALL=testbed.small
FLAVOR_LARGE=testbed.large
FLAVOR_STUCK=testbed.stuck
IMAGE_NAME=testbed-etcd
# Project demo's network and subnet (same name) for etcd servers, outside the /24s the
# integration tests take (198.19.200-254).
ETCD_NETWORK=etcd-members
ETCD_SUBNET_RANGE=198.19.50.0/24
NOVA_DATABASES=(nova_api nova nova_cell0 placement glance cinder)
RABBIT_NODE=testbed@localhost
HYPERVISOR_BIN=$STATE_DIR/bin/hypervisor

# The servers' image: the host's file system plus the etcd releases cluster/tools.sh built
# (one directory per version), which the hypervisor mounts read-only on /opt/etcd.
image_dir() { dirname "$("$SCRIPT_DIR/tools.sh" path etcd)"; }

# nova_compute_configs: nova-compute-N.conf = nova.conf without database access (nova-compute
# refuses it) and with the host's name, which is also its Neutron agent's host.
nova_compute_configs() {
  local h
  for h in "${COMPUTE_HOSTS[@]}"; do
    awk -v host="$h" '
      /^\[/ { skip = ($0 == "[database]" || $0 == "[api_database]") }
      skip { next }
      { print }
      $0 == "[DEFAULT]" { print "host = " host }
    ' "$ETC_DIR/nova.conf" >"$ETC_DIR/nova-$h.conf.tmp"
    mv "$ETC_DIR/nova-$h.conf.tmp" "$ETC_DIR/nova-$h.conf"
  done
}

nova_catalog() {
  local svc iface
  for svc in nova placement glance cinder; do
    local pw_var=${svc^^}_PASSWORD
    echo "user create --domain default --password ${!pw_var} --or-show $svc"
    echo "role add --project service --user $svc admin"
    echo "role add --project service --user $svc service"
  done
  echo "service create --name nova compute"
  echo "service create --name placement placement"
  echo "service create --name glance image"
  # Both names of Cinder's v3 API: Nova (Zed) asks the catalog for volumev3, gophercloud
  # for block-storage.
  echo "service create --name cinder block-storage"
  echo "service create --name cinderv3 volumev3"
  for iface in public internal admin; do
    echo "endpoint create --region $REGION block-storage $iface $CINDER_URL/v3/%(project_id)s"
    echo "endpoint create --region $REGION volumev3 $iface $CINDER_URL/v3/%(project_id)s"
    echo "endpoint create --region $REGION compute $iface $NOVA_URL"
    echo "endpoint create --region $REGION placement $iface $PLACEMENT_URL"
    echo "endpoint create --region $REGION image $iface $GLANCE_URL"
  done
}

# neutron_agents: an alive "Open vSwitch agent" row per compute host, so that ML2 binds the
# servers' ports there (its liveness test is now - heartbeat < agent_down_time: a heartbeat in
# 2099 is alive until then).
neutron_agents() {
  local h sql=
  for h in "${COMPUTE_HOSTS[@]}"; do
    sql+="INSERT INTO agents (id, agent_type, \`binary\`, topic, host, admin_state_up, created_at, started_at,
  heartbeat_timestamp, configurations, \`load\`) VALUES (UUID(), 'Open vSwitch agent',
  'neutron-openvswitch-agent', 'N/A', '$h', 1, UTC_TIMESTAMP(), UTC_TIMESTAMP(), '2099-01-01 00:00:00',
  '{\"tunnel_types\": [\"vxlan\"], \"bridge_mappings\": {}, \"integration_bridge\": \"br-int\", \"datapath_type\": \"system\", \"ovs_hybrid_plug\": false}', 0);
"
  done
  mariadb_sql <<<"USE neutron; $sql" || die "cannot write the Neutron agent rows"
}

nova_manage() { /usr/bin/nova-manage --config-file "$ETC_DIR/nova.conf" "$@"; }

# nova_init: the databases and their schemas (RabbitMQ need not run: create_cell only
# records the transport URL).
nova_init() {
  local logf=$LOG_DIR/nova-init.log db pids=() rc=0
  for db in "${NOVA_DATABASES[@]}"; do mariadb_create_db "$db"; done
  mkdir -p "$STATE_DIR/nova/instances" "$STATE_DIR/nova/lock" "$STATE_DIR/glance"/{images,staging,tasks,cache,lock}
  /usr/bin/placement-manage --config-file "$ETC_DIR/placement.conf" db sync >"$LOG_DIR/placement-manage.log" 2>&1 &
  pids+=($!)
  /usr/bin/glance-manage --config-file "$ETC_DIR/glance-api.conf" db_sync >"$LOG_DIR/glance-manage.log" 2>&1 &
  pids+=($!)
  cinder_argv cinder-manage cinder.cmd.manage
  "${CINDER_ARGV[@]}" --config-file "$ETC_DIR/cinder.conf" db sync >"$LOG_DIR/cinder-manage.log" 2>&1 &
  pids+=($!)
  {
    nova_manage api_db sync &&
      nova_manage cell_v2 map_cell0 --database_connection \
        "mysql+pymysql://nova_cell0:$DB_PASSWORD@localhost/nova_cell0?unix_socket=$DB_SOCKET&charset=utf8" &&
      nova_manage cell_v2 create_cell --name cell1 &&
      nova_manage db sync
  } >"$logf" 2>&1 || rc=1
  for db in "${pids[@]}"; do wait "$db" || rc=1; done
  ((rc == 0)) || die "Nova's, Placement's, Glance's or Cinder's database set-up failed" "$logf" \
    "$LOG_DIR/placement-manage.log" "$LOG_DIR/glance-manage.log" "$LOG_DIR/cinder-manage.log"
}

# RabbitMQ as root without Debian's wrapper (which su's to user rabbitmq), everything under
# the state dir, loopback only. epmd runs as a service of its own: left to RabbitMQ, it would
# daemonise out of RabbitMQ's process group and outlive `down`.
epmd_start() {
  running epmd && return 0
  start_daemon epmd "$EPMD_PORT" "$LOG_DIR/epmd.log" \
    env ERL_EPMD_ADDRESS=$HOST /usr/bin/epmd -port "$EPMD_PORT"
  wait_until epmd 10 "listening port" "$LOG_DIR/epmd.log" port_busy "$EPMD_PORT"
}

rabbitmq_start() {
  running rabbitmq && return 0
  local r=$STATE_DIR/rabbitmq
  mkdir -p "$r/home" "$r/mnesia" "$LOG_DIR/rabbitmq"
  : >"$r/rabbitmq-env.conf"
  echo "[]." >"$r/enabled_plugins"
  start_daemon rabbitmq "$RABBIT_PORT" "$LOG_DIR/rabbitmq.out" \
    env HOME="$r/home" RABBITMQ_NODENAME=$RABBIT_NODE RABBITMQ_NODE_IP_ADDRESS=$HOST \
    RABBITMQ_NODE_PORT=$RABBIT_PORT RABBITMQ_DIST_PORT=$RABBIT_DIST_PORT \
    ERL_EPMD_ADDRESS=$HOST ERL_EPMD_PORT=$EPMD_PORT \
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
    RABBITMQ_CTL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
    RABBITMQ_CONFIG_FILE="$ETC_DIR/rabbitmq.conf" RABBITMQ_CONF_ENV_FILE="$r/rabbitmq-env.conf" \
    RABBITMQ_ENABLED_PLUGINS_FILE="$r/enabled_plugins" RABBITMQ_MNESIA_BASE="$r/mnesia" \
    RABBITMQ_LOG_BASE="$LOG_DIR/rabbitmq" RABBITMQ_PID_FILE="$PID_DIR/rabbitmq.erlpid" \
    /usr/lib/rabbitmq/bin/rabbitmq-server
}

rabbitmq_wait() {
  wait_until rabbitmq "$NOVA_TIMEOUT" "listening port $RABBIT_PORT" "$LOG_DIR/rabbitmq.out" \
    port_busy "$RABBIT_PORT"
}

nova_start() {
  local h
  mkdir -p "$STATE_DIR/nova/instances" "$STATE_DIR/nova/lock" "$STATE_DIR/glance"/{images,staging,tasks,cache,lock}
  running placement || start_daemon placement "$PLACEMENT_PORT" "$LOG_DIR/placement-uwsgi.log" \
    /usr/bin/uwsgi --ini "$ETC_DIR/placement-uwsgi.ini"
  running glance || start_daemon glance "$GLANCE_PORT" "$LOG_DIR/glance-api.out" \
    /usr/bin/glance-api --config-file "$ETC_DIR/glance-api.conf"
  running nova-api || start_daemon nova-api "$NOVA_PORT" "$LOG_DIR/nova-api-uwsgi.log" \
    /usr/bin/uwsgi --ini "$ETC_DIR/nova-api-uwsgi.ini"
  running nova-conductor || start_daemon nova-conductor - "$LOG_DIR/nova-conductor.out" \
    /usr/bin/nova-conductor --config-file "$ETC_DIR/nova.conf" --log-file "$LOG_DIR/nova-conductor.log"
  running nova-scheduler || start_daemon nova-scheduler - "$LOG_DIR/nova-scheduler.out" \
    /usr/bin/nova-scheduler --config-file "$ETC_DIR/nova.conf" --log-file "$LOG_DIR/nova-scheduler.log"
  for h in "${COMPUTE_HOSTS[@]}"; do
    # nova-compute's entry point, without the nova-compute package, with the test bed's
    # driver as nova.virt.testbed (Nova loads drivers from nova.virt only), imported once
    # nova.cmd has monkey-patched for eventlet.
    running "nova-$h" || start_daemon "nova-$h" - "$LOG_DIR/nova-$h.out" \
      /usr/bin/env PYTHONPATH="$TEMPLATE_DIR" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c 'import sys
import nova.cmd
import nova_testbed_driver
sys.modules["nova.virt.testbed"] = nova_testbed_driver
from nova.cmd.compute import main
sys.argv[0] = "nova-compute"
sys.exit(main())' \
      --config-file "$ETC_DIR/nova-$h.conf" --log-file "$LOG_DIR/nova-$h.log"
  done
}

# cinder_argv NAME MODULE sets CINDER_ARGV to the command of a Cinder program run from
# python3-cinder's module, without the Debian package that would install its script (and its
# init scripts and dependencies). PYTHONPATH holds the test bed's volume driver.
cinder_argv() {
  CINDER_ARGV=(/usr/bin/env PYTHONPATH="$TEMPLATE_DIR" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c
    "import sys; from $2 import main; sys.argv[0] = '$1'; sys.exit(main())")
}

cinder_start() {
  local svc
  mkdir -p "$STATE_DIR/cinder/lock"
  for svc in cinder-api cinder-scheduler cinder-volume; do
    running "$svc" && continue
    cinder_argv "$svc" "cinder.cmd.${svc#cinder-}"
    start_daemon "$svc" "$([[ $svc == cinder-api ]] && echo "$CINDER_PORT" || echo -)" "$LOG_DIR/$svc.out" \
      "${CINDER_ARGV[@]}" --config-file "$ETC_DIR/cinder.conf" --log-file "$LOG_DIR/$svc.log"
  done
}

# cinder_volume_up: the volume service reports to the scheduler (until it does, the
# scheduler holds volume creates back).
cinder_volume_up() {
  local tok body
  tok=$(token admin "$ADMIN_PASSWORD" admin)
  [[ -n $tok ]] || return 1
  body=$(curl -s --max-time 10 -H "X-Auth-Token: $tok" "$CINDER_URL/v3/os-services?binary=cinder-volume") || return 1
  grep -q '"state": *"up"' <<<"$body"
}

cinder_wait() {
  wait_until cinder-api "$NOVA_TIMEOUT" "an answer on GET $CINDER_URL/" "$LOG_DIR/cinder-api.log" \
    cinder_answers
  wait_until cinder-volume "$NOVA_TIMEOUT" "the volume service up" "$LOG_DIR/cinder-volume.log" \
    cinder_volume_up
}

# Cinder's version document answers 300 Multiple Choices.
cinder_answers() { [[ $(http_code "$CINDER_URL/") == 300 ]]; }

# nova_hypervisors_registered: every compute host has registered its hypervisor.
nova_hypervisors_registered() {
  local tok body h
  tok=$(token admin "$ADMIN_PASSWORD" admin)
  [[ -n $tok ]] || return 1
  body=$(curl -s --max-time 10 -H "X-Auth-Token: $tok" "$NOVA_URL/os-hypervisors") || return 1
  for h in "${COMPUTE_HOSTS[@]}"; do
    grep -q "\"hypervisor_hostname\": *\"$h\"" <<<"$body" || return 1
  done
}

nova_wait() {
  wait_until placement "$NOVA_TIMEOUT" "200 on GET $PLACEMENT_URL/" "$LOG_DIR/placement-uwsgi.log" \
    http_ok "$PLACEMENT_URL/"
  wait_until glance "$NOVA_TIMEOUT" "an answer on GET $GLANCE_URL/" "$LOG_DIR/glance-api.log" \
    glance_answers
  wait_until nova-api "$NOVA_TIMEOUT" "200 on GET $NOVA_URL/" "$LOG_DIR/nova-api.log" \
    http_ok "$NOVA_URL/"
  wait_until nova-conductor "$NOVA_TIMEOUT" "every compute host registered" \
    "$LOG_DIR/nova-conductor.log" nova_hypervisors_registered
  # Map the hosts into cell1 now rather than at the scheduler's next periodic discovery.
  nova_manage cell_v2 discover_hosts >>"$LOG_DIR/nova-init.log" 2>&1 ||
    die "nova-manage cell_v2 discover_hosts failed" "$LOG_DIR/nova-init.log"
}

# Glance's version document answers 300 Multiple Choices.
glance_answers() { [[ $(http_code "$GLANCE_URL/") == 300 ]]; }

# nova_objects: flavors, the image, the zones (one aggregate per zone) and project demo's
# network for etcd servers (the examples' ClusterProviderConfig names it), once.
nova_objects() {
  local logf=$LOG_DIR/nova-objects.log img=$STATE_DIR/testbed-image.raw h
  # The fake driver never reads the image: any bytes do.
  head -c 1048576 /dev/urandom >"$img"
  {
    echo "flavor create --id 1 --vcpus 1 --ram 512 --disk 1 $FLAVOR_SMALL"
    echo "flavor create --id 2 --vcpus 2 --ram 2048 --disk 10 $FLAVOR_LARGE"
    echo "flavor create --id 3 --vcpus 1 --ram 512 --disk 1 --property testbed:stuck_build=first-of-group $FLAVOR_STUCK"
    echo "image create --disk-format raw --container-format bare --file $img --public $IMAGE_NAME"
    echo "aggregate create --zone ${ZONES[0]} ${ZONES[0]}"
    echo "aggregate create --zone ${ZONES[1]} ${ZONES[1]}"
    for h in "${COMPUTE_HOSTS[@]}"; do
      echo "aggregate add host $(compute_zone "$h") $h"
    done
    echo "network create --project demo $ETCD_NETWORK"
    echo "subnet create --project demo --network $ETCD_NETWORK --subnet-range $ETCD_SUBNET_RANGE $ETCD_NETWORK"
  } | openstack_admin >"$logf" 2>&1 || die "creating flavors, image and zones failed" "$logf"
  rm -f "$img"
  local tok
  tok=$(token admin "$ADMIN_PASSWORD" admin)
  [[ $(curl -s --max-time 10 -H "X-Auth-Token: $tok" "$NOVA_URL/os-availability-zone") == *"${ZONES[1]}"* ]] ||
    die "the availability zones were not made" "$logf"
  [[ $(curl -s --max-time 10 -H "X-Auth-Token: $tok" "$NEUTRON_URL/v2.0/subnets?name=$ETCD_NETWORK") == *"$ETCD_SUBNET_RANGE"* ]] ||
    die "the subnet $ETCD_NETWORK was not made" "$logf"
}

# hypervisor_start: build the hypervisor (cached by Go) and run it as admin.
hypervisor_start() {
  running hypervisor && return 0
  local logf=$LOG_DIR/hypervisor.log image
  image=$(image_dir)
  mkdir -p "$image" "$STATE_DIR/hypervisor" "$(dirname "$HYPERVISOR_BIN")"
  (cd "$REPO_ROOT" && CGO_ENABLED=0 go build -o "$HYPERVISOR_BIN" ./cluster/hypervisor) >>"$logf" 2>&1 ||
    die "cannot build the hypervisor" "$logf"
  rm -f "$STATE_DIR/hypervisor/ready"
  "$SCRIPT_DIR/tools.sh" etcd-release >>"$logf" 2>&1 || die "cannot pack the mirror's etcd release" "$logf"
  start_daemon hypervisor - "$logf" env OS_AUTH_URL="$KEYSTONE_URL" OS_REGION_NAME="$REGION" \
    OS_ADMIN_USERNAME=admin OS_ADMIN_PASSWORD="$ADMIN_PASSWORD" OS_ADMIN_PROJECT_NAME=admin \
    "$HYPERVISOR_BIN" run --state "$STATE_DIR/hypervisor" --image "$image" \
    --services-address "$SERVICES_ADDRESS" --mirror "$("$SCRIPT_DIR/tools.sh" path etcd-release)" \
    --mirror-port "$MIRROR_PORT" --forward "$SWIFT_PROXY_PORT"
  wait_until hypervisor 60 "its first look at Nova" "$logf" test -f "$STATE_DIR/hypervisor/ready"
}

# ---------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------

# Start order; stopped in reverse.
SERVICES=(memcached mariadb keystone neutron swift-account swift-container swift-object swift-proxy
  epmd rabbitmq placement glance nova-api nova-conductor nova-scheduler
  cinder-api cinder-scheduler cinder-volume nova-compute-1 nova-compute-2 nova-compute-3 hypervisor)

all_running() {
  local s
  for s in "${SERVICES[@]}"; do running "$s" || return 1; done
}

stop_all() {
  # The hypervisor first: it halts the servers it runs (their etcd members get up to 20 s
  # each) and removes their namespaces and bridges.
  stop_service hypervisor 180
  local h
  for h in "${COMPUTE_HOSTS[@]}"; do stop_service "nova-$h" 30; done
  stop_service cinder-volume 30
  stop_service cinder-scheduler 30
  stop_service cinder-api 30
  stop_service nova-scheduler 30
  stop_service nova-conductor 30
  stop_service nova-api 30
  stop_service glance 30
  stop_service placement 30
  stop_service rabbitmq 60
  stop_service epmd 10
  stop_service swift-proxy 30
  stop_service swift-object 30
  stop_service swift-container 30
  stop_service swift-account 30
  stop_service neutron 30
  stop_service keystone 30
  stop_service mariadb 60
  stop_service memcached 10
}

# On TERM or INT, end the set-up steps still running in this script's background jobs
# (keystone-manage, neutron-db-manage, swift-ring-builder, waits), or they would go on after
# we exit and hold the lock. Daemons run in their own sessions and are left alone: their PID files track them.
on_interrupt() {
  trap - INT TERM
  log "interrupted"
  local table sid queue=("$$") found=() p c
  table=$(ps -eo pid=,ppid=,sid=)
  sid=$(awk -v p="$$" '$1 == p { print $3 }' <<<"$table")
  while ((${#queue[@]})); do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    while read -r c; do
      found+=("$c")
      queue+=("$c")
    done < <(awk -v p="$p" -v s="$sid" '$2 == p && $3 == s { print $1 }' <<<"$table")
  done
  ((${#found[@]} == 0)) || kill -TERM "${found[@]}" 2>/dev/null || true
  exit 130
}

take_lock() {
  mkdir -p "$RUN_DIR"
  exec 9>"$LOCK_FILE"
  flock 9
}

# initialised: true when a fresh `up` of this version of the script completed.
initialised() { [[ -f $INIT_MARKER && $(<"$INIT_MARKER") == "$STATE_VERSION" ]]; }

cmd_up() {
  local t0 fresh=false
  t0=$(now)
  # A unix socket path must fit in 108 bytes.
  ((${#DB_SOCKET} < 100)) || die "RUN_DIR is too long for MariaDB's socket path: $DB_SOCKET"
  trap on_interrupt INT TERM
  take_lock
  cmd_install
  if initialised && all_running && http_ok "$KEYSTONE_URL" &&
    http_ok "$NEUTRON_URL/" && http_ok "$(swift_healthcheck_url proxy)" &&
    neutron_api_ok && swift_api_ok && http_ok "$NOVA_URL/" && cinder_answers &&
    [[ -f $STATE_DIR/hypervisor/ready ]]; then
    write_client_files
    log "already running (checked in $(elapsed "$t0")s); env: $ENV_FILE"
    return 0
  fi
  if ! initialised; then
    # First start, an earlier first start did not finish, or state made by an older version
    # of this script (e.g. without Swift): begin from nothing.
    if [[ -f $INIT_MARKER ]]; then
      log "state in $STATE_DIR is from another version of this script: rebuilding it"
    fi
    fresh=true
    stop_all
    rm -rf "$STATE_DIR"
  fi
  mkdir -p "$ETC_DIR" "$LOG_DIR" "$PID_DIR" "$STATE_DIR/neutron/lock" "$STATE_DIR/keystone/lock"
  render_configs

  memcached_start
  if $fresh; then
    mariadb_init
  else
    # Importing keystone in the uwsgi workers is the longest step of a restart and needs
    # no database: let it overlap with MariaDB's start.
    keystone_start
  fi
  mariadb_start

  # Keystone's and Neutron's set-ups are independent until the first authenticated call:
  # run them side by side (neutron-db-manage alone takes about 25 s).
  (
    if $fresh; then keystone_init; fi
    keystone_start
    keystone_wait
    if $fresh; then catalog_init; fi
  ) &
  local keystone_job=$!
  (
    if $fresh; then
      neutron_init
      neutron_agents
    fi
    neutron_start
    neutron_wait
  ) &
  local neutron_job=$!
  # Nova's schemas (the longest set-up: about 30 s) and RabbitMQ (about 9 s to its first
  # start) need only MariaDB.
  (
    if $fresh; then nova_init; fi
    epmd_start
    rabbitmq_start
  ) &
  local nova_job=$!
  # Swift needs no database. Its rings are built at once; its servers start once Keystone
  # answers (they would only compete for the CPU with Keystone's start before).
  (
    if $fresh; then swift_init; fi
    # Keystone may not even be started yet (keystone_init): follow its job instead.
    until http_ok "$KEYSTONE_URL"; do
      kill -0 "$keystone_job" 2>/dev/null || http_ok "$KEYSTONE_URL" ||
        die "swift: not started, Keystone did not come up"
      sleep 0.25
    done
    swift_start
    swift_wait
  ) &
  local swift_job=$!
  local rc=0
  wait "$keystone_job" || rc=1
  wait "$neutron_job" || rc=1
  wait "$swift_job" || rc=1
  wait "$nova_job" || rc=1
  ((rc == 0)) || die "start-up failed (see above); logs in $LOG_DIR; \`$0 down\` stops what runs"

  # Nova's services authenticate with Keystone and Neutron as they start.
  rabbitmq_wait
  cinder_start
  nova_start
  nova_wait
  cinder_wait
  if $fresh; then nova_objects; fi
  hypervisor_start

  wait_until neutron 60 "authenticated security-group list as demo" \
    "$LOG_DIR/neutron-server.log" neutron_api_ok
  wait_until swift-proxy 60 "S3 ListBuckets with the readiness-check EC2 credential" \
    "$LOG_DIR/swift-proxy-server.log" swift_api_ok
  if $fresh; then echo "$STATE_VERSION" >"$INIT_MARKER"; fi
  write_client_files
  log "up in $(elapsed "$t0")s ($($fresh && echo "new state" || echo "existing state")); env: $ENV_FILE"
}

cmd_down() {
  [[ -d $STATE_DIR ]] || return 0
  take_lock
  stop_all
  if [[ ${1:-} == --purge ]]; then
    rm -rf "$STATE_DIR"
    log "stopped and purged $STATE_DIR"
  else
    log "stopped (data kept in $STATE_DIR)"
  fi
}

cmd_stop() {
  local svc=${1:-} s
  for s in "${SERVICES[@]}"; do
    if [[ $s == "$svc" ]]; then
      take_lock
      stop_service "$svc"
      return 0
    fi
  done
  die "stop: unknown service '$svc' (one of: ${SERVICES[*]})"
}

cmd_status() {
  # Exit 0 only when every service runs, so callers can tell whether to start (and later stop)
  # the test bed.
  local rc=0
  if [[ ! -d $STATE_DIR ]]; then
    echo "openstack: no state in $STATE_DIR"
    return 1
  fi
  daemon_status "${SERVICES[@]}" || rc=1
  printf '%-16s GET %s -> %s\n' keystone "$KEYSTONE_URL" "$(http_code "$KEYSTONE_URL")"
  printf '%-16s GET %s/ -> %s\n' neutron "$NEUTRON_URL" "$(http_code "$NEUTRON_URL/")"
  for s in "${SWIFT_STORAGE[@]}" proxy; do
    printf '%-16s GET %s -> %s\n' "swift-$s" "$(swift_healthcheck_url "$s")" \
      "$(http_code "$(swift_healthcheck_url "$s")")"
  done
  printf '%-16s GET %s/ -> %s\n' nova-api "$NOVA_URL" "$(http_code "$NOVA_URL/")"
  printf '%-16s %s\n' hypervisor "$([[ -f $STATE_DIR/hypervisor/ready ]] && echo "following Nova" || echo "not ready")"
  if initialised; then
    printf 'initialised: yes\n'
  elif [[ -f $INIT_MARKER ]]; then
    printf 'initialised: by another version of this script (the next up rebuilds)\n'
  else
    printf 'initialised: no\n'
  fi
  printf 'env file:    %s\n' "$ENV_FILE"
  return "$rc"
}

main() {
  local cmd=${1:-}
  shift || true
  case $cmd in
    install) cmd_install ;;
    up) cmd_up ;;
    down) cmd_down "$@" ;;
    purge) cmd_down --purge ;;
    stop) cmd_stop "$@" ;;
    status) cmd_status ;;
    env) echo "$ENV_FILE" ;;
    *)
      echo "usage: $0 install|up|down [--purge]|purge|stop SERVICE|status|env" >&2
      exit 2
      ;;
  esac
}

main "$@"
