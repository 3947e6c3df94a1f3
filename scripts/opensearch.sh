#!/usr/bin/env bash
# Single-node OpenSearch 2.19 + k-NN plugin (lucene engine) for development and CI,
# without Docker: the server, its modules and the k-NN plugin come from Maven
# Central and run embedded in a small launcher (scripts/opensearch/).
#
# Usage: scripts/opensearch.sh up [--nodes 2] | down [--node N] | status
#   up --nodes 2  also starts node-2, a data node on the next HTTP and transport ports that joins
#                 node-1 (indices then get one replica: they auto-expand 0-1)
#   down --node 2 stops only node-2 (the cluster stays up, yellow); plain `down` stops both
#
# Environment:
#   OPENSEARCH_PORT             HTTP port on 127.0.0.1 (default: this checkout's, scripts/checkout.sh)
#   OPENSEARCH_TRANSPORT_PORT   first transport port tried, up to +9 (default: this checkout's)
#   OPENSEARCH_HEAP             heap size for -Xms/-Xmx (default 1g)
#   OPENSEARCH_JAVA_OPTS        extra JVM options
#   OPENSEARCH_START_TIMEOUT    seconds to wait for yellow/green (default 180)
#   OPENSEARCH_JAVA_HOME        JDK to run Maven and the node with; must be 17..23
#                               (default: /usr/lib/jvm/java-17-openjdk-amd64 if present,
#                               else JAVA_HOME, else `java` on PATH)
#   SERVICES_DIR                state root (default <repo>/.services); data, logs,
#                               config and the PID file go to $SERVICES_DIR/opensearch/
# `down` stops only the nodes whose PID files are in this checkout's state directory.
#
# Needs: a JDK 17 (openjdk-17-jdk-headless), Maven (maven) and curl.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$SCRIPT_DIR/.." && pwd)"
OS_SRC="$SCRIPT_DIR/opensearch"
TARGET="$OS_SRC/target"
source "$SCRIPT_DIR/checkout.sh"
BASE_PORT="$OPENSEARCH_PORT"
BASE_TRANSPORT_PORT="$OPENSEARCH_TRANSPORT_PORT"

# Point the per-node globals (state dir, PID file, log, ports, name, roles) at node N (1 or 2).
select_node() {
    NODE="$1"
    if [[ "$NODE" == 1 ]]; then
        STATE="$SERVICES_DIR/opensearch"; NODE_NAME=node-1; ROLES=""
    else
        STATE="$SERVICES_DIR/opensearch-node$NODE"; NODE_NAME="node-$NODE"; ROLES="node.roles: [data, ingest]"
    fi
    PIDFILE="$STATE/opensearch.pid"
    LOG="$STATE/logs/opensearch.log"
    PORT=$((BASE_PORT + NODE - 1))
    TRANSPORT_PORT=$((BASE_TRANSPORT_PORT + NODE - 1))
    URL="http://127.0.0.1:$PORT"
}
select_node 1
HEAP="${OPENSEARCH_HEAP:-1g}"
START_TIMEOUT="${OPENSEARCH_START_TIMEOUT:-180}"
MAIN_CLASS="local.opensearch.EmbeddedOpenSearch"

log() { echo "[opensearch] $*"; }
die() { echo "[opensearch] ERROR: $*" >&2; exit 1; }

pick_java_home() {
    if [[ -n "${OPENSEARCH_JAVA_HOME:-}" ]]; then
        echo "$OPENSEARCH_JAVA_HOME"
    elif [[ -x /usr/lib/jvm/java-17-openjdk-amd64/bin/java ]]; then
        echo /usr/lib/jvm/java-17-openjdk-amd64
    elif [[ -n "${JAVA_HOME:-}" ]]; then
        echo "$JAVA_HOME"
    elif command -v java >/dev/null 2>&1; then
        # resolve .../bin/java -> JDK home
        dirname "$(dirname "$(readlink -f "$(command -v java)")")"
    else
        die "no Java found: install a JDK 17 (apt-get install -y openjdk-17-jdk-headless) or set OPENSEARCH_JAVA_HOME"
    fi
}

now_ms() { date +%s%3N; }

# PID from the PID file if that process is alive and is our launcher.
running_pid() {
    [[ -f "$PIDFILE" ]] || return 1
    local pid
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$MAIN_CLASS" || return 1
    echo "$pid"
}

# Cluster health status (green/yellow/red) or empty when not answering.
health() {
    curl -s --max-time 3 "$URL/_cluster/health" 2>/dev/null \
        | sed -n 's/.*"status"[[:space:]]*:[[:space:]]*"\([a-z]*\)".*/\1/p' || true
}

is_healthy() {
    local h
    h="$(health)"
    [[ "$h" == green || "$h" == yellow ]]
}

port_in_use() {
    if command -v ss >/dev/null 2>&1; then
        ss -Htln "sport = :$1" 2>/dev/null | grep -q .
    else
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
    fi
}

# Build (or reuse) the launcher + classpath under scripts/opensearch/target.
build() {
    local stamp="$TARGET/.build-ok"
    if [[ -f "$stamp" && -f "$TARGET/opensearch-launcher.jar" ]] \
        && compgen -G "$TARGET/knn/opensearch-knn-*.jar" >/dev/null \
        && [[ -z "$(find "$OS_SRC/pom.xml" "$OS_SRC/src" -newer "$stamp" -print -quit)" ]]; then
        return 0
    fi
    command -v mvn >/dev/null 2>&1 || die "Maven not found: apt-get install -y maven"
    log "building launcher and resolving OpenSearch jars with Maven (cached in ~/.m2 after the first run)..."
    local t0
    t0=$(now_ms)
    rm -f "$stamp"
    # clean lib/ so version changes in the pom do not leave stale jars on the classpath
    rm -rf "${TARGET:?}/lib" "${TARGET:?}/knn" "${TARGET:?}/dependency-maven-plugin-markers"
    mkdir -p "$TARGET"
    if ! JAVA_HOME="$JAVA_HOME_SEL" mvn -q -B -Dstyle.color=never -f "$OS_SRC/pom.xml" package \
        >"$TARGET/mvn-build.log" 2>&1; then
        tail -n 40 "$TARGET/mvn-build.log" >&2 || true
        die "Maven build of $OS_SRC failed (full output: $TARGET/mvn-build.log)"
    fi
    touch "$stamp"
    log "build done in $(( ($(now_ms) - t0) / 1000 ))s"
}

write_config() {
    mkdir -p "$STATE/home/config" "$STATE/data" "$STATE/logs"
    sed -e "s#@DATA_DIR@#$STATE/data#" \
        -e "s#@LOGS_DIR@#$STATE/logs#" \
        -e "s#@HTTP_PORT@#$PORT#" \
        -e "s#@TRANSPORT_PORT@#$TRANSPORT_PORT-$((TRANSPORT_PORT + 9))#" \
        -e "s#@NODE_NAME@#$NODE_NAME#" \
        -e "s#@ROLES@#$ROLES#" \
        -e "s#@SEED_HOSTS@#127.0.0.1:$BASE_TRANSPORT_PORT#" \
        "$OS_SRC/config/opensearch.yml.template" >"$STATE/home/config/opensearch.yml"
    cp "$OS_SRC/config/log4j2.properties" "$STATE/home/config/log4j2.properties"
}

cmd_status() {
    local pid
    if pid="$(running_pid)"; then
        if is_healthy; then
            log "up (pid $pid, $URL, cluster $(health))"
            return 0
        fi
        log "process running (pid $pid) but $URL/_cluster/health is not yellow/green"
        return 1
    fi
    log "down"
    return 1
}

stop_pid() {
    local pid="$1" i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 60; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.5
    done
    log "pid $pid did not stop after SIGTERM (30s), sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.5
    done
}

cmd_down() {
    local pid
    if pid="$(running_pid)"; then
        log "stopping pid $pid..."
        stop_pid "$pid"
        log "stopped"
    else
        log "not running"
    fi
    rm -f "$PIDFILE"
}

cmd_up() {
    local t0 pid
    t0=$(now_ms)
    if pid="$(running_pid)"; then
        if is_healthy; then
            log "already up (pid $pid, $URL, cluster $(health))"
            return 0
        fi
        log "process pid $pid exists but is not healthy yet; waiting for it"
    else
        rm -f "$PIDFILE"
        if port_in_use "$PORT"; then
            die "port $PORT is already in use by another process (not started by this script); set OPENSEARCH_PORT"
        fi
        command -v curl >/dev/null 2>&1 || die "curl not found: apt-get install -y curl"
        JAVA_HOME_SEL="$(pick_java_home)"
        local java="$JAVA_HOME_SEL/bin/java"
        [[ -x "$java" ]] || die "$java not found"
        local jv
        jv="$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
        if [[ -z "$jv" || "$jv" -lt 17 || "$jv" -ge 24 ]]; then
            die "OpenSearch 2.19 needs Java 17..23, $java is '$jv' (set OPENSEARCH_JAVA_HOME)"
        fi
        build
        write_config
        mkdir -p "$STATE/tmp"
        local cp="$TARGET/opensearch-launcher.jar:$TARGET/lib/*:$TARGET/knn/*"
        echo "===== $(date -Is) starting OpenSearch ($java, heap $HEAP, port $PORT)" >>"$LOG"
        # Options follow the distribution's jvm.options where they matter.
        # shellcheck disable=SC2086
        nohup "$java" \
            -Xms"$HEAP" -Xmx"$HEAP" \
            -XX:+UseG1GC -XX:G1ReservePercent=25 -XX:InitiatingHeapOccupancyPercent=30 \
            -Xss1m -XX:-OmitStackTraceInFastThrow \
            -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djna.nosys=true \
            -Dio.netty.noUnsafe=true -Dio.netty.noKeySetOptimization=true \
            -Dio.netty.recycler.maxCapacityPerThread=0 -Dio.netty.allocator.numDirectArenas=0 \
            -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true -Dlog4j2.formatMsgNoLookups=true \
            -Djava.locale.providers=SPI,COMPAT \
            -Djava.io.tmpdir="$STATE/tmp" \
            -Dopensearch.path.home="$STATE/home" \
            ${OPENSEARCH_JAVA_OPTS:-} \
            -cp "$cp" "$MAIN_CLASS" </dev/null >>"$LOG" 2>&1 &
        pid=$!
        echo "$pid" >"$PIDFILE"
        log "started pid $pid, waiting up to ${START_TIMEOUT}s for $URL to be yellow/green (log: $LOG)"
    fi

    local deadline=$(( $(date +%s) + START_TIMEOUT ))
    while :; do
        if is_healthy; then
            log "$NODE_NAME up in $(( ($(now_ms) - t0) / 1000 )).$(( ($(now_ms) - t0) % 1000 / 100 ))s (pid $pid, $URL, cluster $(health))"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "[opensearch] ERROR: the OpenSearch process (pid $pid) exited during startup. Last log lines ($LOG):" >&2
            tail -n 60 "$LOG" >&2 || true
            rm -f "$PIDFILE"
            exit 1
        fi
        if (( $(date +%s) >= deadline )); then
            echo "[opensearch] ERROR: OpenSearch not yellow/green after ${START_TIMEOUT}s (health: '$(health)'). Last log lines ($LOG):" >&2
            tail -n 60 "$LOG" >&2 || true
            log "stopping the half-started node (pid $pid)"
            stop_pid "$pid"
            rm -f "$PIDFILE"
            exit 1
        fi
        sleep 1
    done
}

nodes_wanted() {  # 1, or N from `--nodes N`
    if [[ "${1:-}" == "--nodes" ]]; then
        [[ "${2:-}" =~ ^[12]$ ]] || die "--nodes takes 1 or 2"
        echo "$2"
    else
        echo 1
    fi
}

case "${1:-}" in
    up)
        count="$(nodes_wanted "${2:-}" "${3:-}")"
        for n in $(seq 1 "$count"); do select_node "$n"; cmd_up; done ;;
    down)
        if [[ "${2:-}" == "--node" ]]; then
            select_node "${3:?--node takes a node number}"; cmd_down
        else
            for n in 2 1; do select_node "$n"; [[ $n == 1 || -f "$PIDFILE" ]] && cmd_down; done
        fi ;;
    status)
        rc=0
        for n in 1 2; do select_node "$n"; if [[ $n == 1 || -f "$PIDFILE" ]]; then cmd_status || rc=1; fi; done
        exit $rc ;;
    *)
        echo "usage: $0 up [--nodes 2] | down [--node N] | status" >&2
        exit 2
        ;;
esac
