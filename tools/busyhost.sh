#!/bin/sh
# A busy, shared host for the test suite (issue 38): a pinned busy loop on
# each CPU, and a ClickHouse server of its own on loopback under a loop of
# queries (its threads' C++ names, with spaces and templates, in every
# whole-host recording), as other work on a machine would be.
#
#   tools/busyhost.sh start [DIR]     start it all; DIR (default
#                                     /tmp/spanperf-busyhost) holds the server's
#                                     config, data and logs, and the pids
#   tools/busyhost.sh stop [DIR]      stop what start started (by its pids) and
#                                     remove DIR
#   tools/busyhost.sh run CMD [ARG]...
#                                     start, run CMD, stop (on any exit);
#                                     CMD's exit status
#
# The server is Debian's clickhouse-server (18.16), started by hand with its
# own config, never the system service (apt-get install -y clickhouse-server
# clickhouse-client).  BUSYHOST_HOGS=0 leaves the CPU hogs out,
# BUSYHOST_QUERIES=N runs N query loops (default 2).
set -eu

dir_of() { echo "${1:-/tmp/spanperf-busyhost}"; }

# A TCP port of 127.0.0.1 nobody listens on.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_config() {
	d=$1 http=$2 tcp=$3
	mkdir -p "$d/data" "$d/tmp" "$d/user_files" "$d/format_schemas" "$d/log"
	cat > "$d/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <logger>
        <level>warning</level>
        <log>$d/log/server.log</log>
        <errorlog>$d/log/server.err.log</errorlog>
        <size>100M</size>
        <count>1</count>
    </logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>$http</http_port>
    <tcp_port>$tcp</tcp_port>
    <path>$d/data/</path>
    <tmp_path>$d/tmp/</tmp_path>
    <user_files_path>$d/user_files/</user_files_path>
    <format_schema_path>$d/format_schemas/</format_schema_path>
    <users_config>$d/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <mark_cache_size>536870912</mark_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
EOF
	cat > "$d/users.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>default</profile>
            <quota>default</quota>
        </default>
    </users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
EOF
}

# Each background process's pid goes into DIR/pids, for stop.
bg() {
	d=$1
	shift
	"$@" > /dev/null 2>&1 &
	echo $! >> "$d/pids"
}

query() {
	clickhouse-client --host 127.0.0.1 --port "$(cat "$1/tcp_port")" --query "$2"
}

start() {
	d=$(dir_of "${1:-}")
	command -v clickhouse-server > /dev/null && command -v clickhouse-client > /dev/null || {
		echo "busyhost: clickhouse-server and clickhouse-client are not installed (apt-get install -y clickhouse-server clickhouse-client)" >&2
		exit 1
	}
	if [ -e "$d/pids" ]; then
		echo "busyhost: $d/pids exists: already started? (tools/busyhost.sh stop $d)" >&2
		exit 1
	fi
	http=$(free_port)
	tcp=$(free_port)
	write_config "$d" "$http" "$tcp"
	echo "$tcp" > "$d/tcp_port"
	: > "$d/pids"
	bg "$d" clickhouse-server --config-file="$d/config.xml"
	i=0
	until query "$d" "SELECT 1" > /dev/null 2>&1; do
		i=$((i + 1))
		if [ $i -gt 100 ]; then
			echo "busyhost: the server did not answer on 127.0.0.1:$tcp in 20 s (see $d/log)" >&2
			stop "$d"
			exit 1
		fi
		sleep 0.2
	done
	# A table whose merges and reads add I/O waits to the CPU of the scans.
	query "$d" "CREATE TABLE IF NOT EXISTS busy (k UInt64, s String) ENGINE = MergeTree ORDER BY k"
	n=0
	while [ $n -lt "${BUSYHOST_QUERIES:-2}" ]; do
		bg "$d" sh -c "while :; do
			clickhouse-client --host 127.0.0.1 --port $tcp --query 'SELECT sum(number) FROM numbers(100000000)'
			clickhouse-client --host 127.0.0.1 --port $tcp --query 'INSERT INTO busy SELECT number, toString(cityHash64(number)) FROM numbers(1000000)'
			clickhouse-client --host 127.0.0.1 --port $tcp --query 'SELECT count(), uniqExact(s) FROM busy WHERE k % 7 = 3'
			clickhouse-client --host 127.0.0.1 --port $tcp --query 'OPTIMIZE TABLE busy FINAL'
		done"
		n=$((n + 1))
	done
	if [ "${BUSYHOST_HOGS:-1}" != 0 ]; then
		for cpu in $(seq 0 $(($(nproc) - 1))); do
			bg "$d" taskset -c "$cpu" sh -c 'while :; do :; done'
		done
	fi
	echo "busyhost: ClickHouse on 127.0.0.1:$tcp (http $http) under $(cat "$d/pids" | wc -l) background loops; data in $d"
}

# Kills each pid we started, and its children (the query loops' clients).
stop() {
	d=$(dir_of "${1:-}")
	[ -e "$d/pids" ] || { rm -rf "$d"; return 0; }
	for p in $(cat "$d/pids"); do
		for c in $(pgrep -P "$p" 2>/dev/null); do
			kill -9 "$c" 2>/dev/null || true
		done
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$d"
	echo "busyhost: stopped"
}

case "${1:-}" in
start)
	start "${2:-}"
	;;
stop)
	stop "${2:-}"
	;;
run)
	shift
	[ $# -gt 0 ] || { echo "usage: tools/busyhost.sh run CMD [ARG]..." >&2; exit 2; }
	d=$(mktemp -d /tmp/spanperf-busyhost-XXXXXX)
	rmdir "$d"
	start "$d"
	trap 'stop "$d"' EXIT
	trap 'exit 130' INT TERM
	set +e
	# A shell started in the background ignores SIGINT and SIGQUIT, and its
	# children inherit that: the tests stop recorders with SIGINT, and one
	# left ignoring it recorded on for 25 minutes.  CMD gets the defaults.
	env --default-signal=INT,QUIT "$@"
	rc=$?
	set -e
	exit $rc
	;;
*)
	sed -n '2,20s/^# \{0,1\}//p' "$0" >&2
	exit 2
	;;
esac
