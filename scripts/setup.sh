#!/usr/bin/env bash
# Installs everything `memory` needs on a Debian/Ubuntu machine, idempotently:
#   - PostgreSQL server binaries (any major >= 15 already present is used as is)
#   - pgvector >= 0.7 for that PostgreSQL (distro package when one exists, else a source build)
#   - pgBackRest (Debian's `pgbackrest`): the embedded cluster archives its WAL with it and
#     `memory db backup|restore|verify` run it (docs/operations.md), for `make run` too
#   - PgBouncer (Debian's package), with the dev extras only: the replica tests run it in
#     transaction pooling mode in front of their cluster (`make run` does not need it)
#   - Chromium and its WebDriver (Debian's `chromium`, `chromium-driver`) and a Chinese font
#     (`fonts-wqy-zenhei`), with the dev extras only: the console's e2e tests drive a
#     headless browser, and its screenshots show the demo's Chinese chat
#   - a virtual environment at .venv with the project's locked runtime dependencies
#     (requirements.lock); with MEMORY_EXTRAS=dev (what `make test` sets) the locked dev
#     tools too (requirements-dev.lock): `make run` installs no linter or test runner
# Each step checks first and does nothing when its result is already there.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
PGVECTOR_MIN="0.7.0"
EXTRAS="${MEMORY_EXTRAS:-}"

log() { printf '[setup] %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        log "need root for: $*"; exit 1; fi
}

APT_UPDATED=0
apt_update_once() {
    if [ "$APT_UPDATED" -eq 0 ]; then
        log "apt-get update"
        as_root apt-get -o DPkg::Lock::Timeout=600 update -qq
        APT_UPDATED=1
    fi
}

apt_install() {
    apt_update_once
    log "apt-get install $*"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" >/dev/null
}

pg_bindir() {
    # Newest installed PostgreSQL server with initdb.
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5 -n -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/postgres" ]; then echo "$d"; return 0; fi
    done
    return 1
}

ensure_postgres() {
    if pg_bindir >/dev/null; then
        log "PostgreSQL server found: $(pg_bindir)"
        return
    fi
    log "installing PostgreSQL server"
    apt_install postgresql
    # The distro package may start its own cluster; we never use it, so leave it be.
    pg_bindir >/dev/null || { log "PostgreSQL install failed"; exit 1; }
}

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

installed_pgvector_version() {
    local sharedir="$1" f
    f="$sharedir/extension/vector.control"
    [ -f "$f" ] || return 1
    sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$f"
}

ensure_pgvector() {
    local bindir major pgconfig sharedir have
    bindir="$(pg_bindir)"
    major="$(basename "$(dirname "$bindir")")"
    pgconfig="$bindir/pg_config"
    [ -x "$pgconfig" ] || pgconfig="$(command -v pg_config || true)"
    sharedir="/usr/share/postgresql/$major"
    if have="$(installed_pgvector_version "$sharedir")" && version_ge "$have" "$PGVECTOR_MIN"; then
        log "pgvector $have found for PostgreSQL $major"
        return
    fi
    apt_update_once
    local candidate
    candidate="$(apt-cache policy "postgresql-$major-pgvector" 2>/dev/null | sed -n 's/^ *Candidate: *//p')"
    if [ -n "$candidate" ] && [ "$candidate" != "(none)" ] && version_ge "${candidate%%-*}" "$PGVECTOR_MIN"; then
        log "installing postgresql-$major-pgvector $candidate from the distro"
        apt_install "postgresql-$major-pgvector"
    else
        build_pgvector_from_source "$major"
    fi
    have="$(installed_pgvector_version "$sharedir")" || { log "pgvector install failed"; exit 1; }
    version_ge "$have" "$PGVECTOR_MIN" || { log "pgvector $have < $PGVECTOR_MIN"; exit 1; }
    log "pgvector $have installed"
}

build_pgvector_from_source() {
    # Debian 12 ships no pgvector package. Debian 13's source package builds cleanly against
    # the local server headers; never install trixie *binaries* (they drag in a new glibc).
    local major="$1" work src list
    log "building pgvector from Debian's trixie source package for PostgreSQL $major"
    dpkg -s "postgresql-server-dev-$major" >/dev/null 2>&1 || apt_install "postgresql-server-dev-$major" build-essential
    command -v dpkg-source >/dev/null || apt_install dpkg-dev
    list=/etc/apt/sources.list.d/memory-trixie-src.sources
    if [ ! -f "$list" ]; then
        as_root tee "$list" >/dev/null <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        APT_UPDATED=0
    fi
    apt_update_once
    work="$(mktemp -d)"
    (cd "$work" && apt-get source --download-only pgvector >/dev/null 2>&1)
    src="$(ls "$work"/pgvector_*.orig.tar.* | head -n1)"
    tar -xf "$src" -C "$work"
    (cd "$work"/pgvector-*/ && make -s PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" >/dev/null 2>&1 \
        || make -s >/dev/null)
    (cd "$work"/pgvector-*/ && as_root make -s install PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" >/dev/null 2>&1 \
        || as_root make -s install >/dev/null)
    rm -rf "$work"
}

ensure_pgbackrest() {
    if command -v pgbackrest >/dev/null; then
        log "pgBackRest found: $(pgbackrest version)"
        return
    fi
    log "installing pgBackRest (WAL archiving and backups of the embedded cluster)"
    apt_install pgbackrest
    command -v pgbackrest >/dev/null || { log "pgBackRest install failed"; exit 1; }
}

ensure_pgbouncer() {
    case ",$EXTRAS," in *,dev,*) ;; *) return ;; esac
    if command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ]; then
        log "PgBouncer found"
        return
    fi
    log "installing PgBouncer (for the replica tests)"
    apt_install pgbouncer
}

ensure_chromium() {
    case ",$EXTRAS," in *,dev,*) ;; *) return ;; esac
    if command -v chromium >/dev/null && command -v chromedriver >/dev/null \
        && dpkg -s fonts-wqy-zenhei >/dev/null 2>&1; then
        log "Chromium, chromedriver and a CJK font found"
        return
    fi
    log "installing Chromium, chromedriver and a CJK font (for the console's browser tests)"
    apt_install chromium chromium-driver fonts-wqy-zenhei
}

ensure_promtool() {
    case ",$EXTRAS," in *,dev,*) ;; *) return ;; esac
    if command -v promtool >/dev/null; then
        log "promtool found"
        return
    fi
    log "installing Prometheus's promtool (the suite checks deploy/prometheus/alerts.yml)"
    apt_install prometheus
}

ensure_venv() {
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating virtual environment at $VENV"
        if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
            apt_install python3-venv
            "$PYTHON" -m venv "$VENV"
        fi
    fi
    # Both lock files are generated from pyproject.toml with hashes (see the README); the
    # stamp records which lock was installed and its checksum, so a changed lock reinstalls
    # and a venv that already has the dev tools serves `make run` as it is.
    local lock="$ROOT/requirements.lock"
    [ "$EXTRAS" = "dev" ] && lock="$ROOT/requirements-dev.lock"
    local stamp="$VENV/.memory-installed" want have=""
    want="$(basename "$lock") $(sha256sum "$lock" | cut -d' ' -f1) $(sha256sum "$ROOT/pyproject.toml" | cut -d' ' -f1)"
    [ -f "$stamp" ] && have="$(cat "$stamp")"
    if [ "$have" = "$want" ]; then
        log "Python packages up to date ($(basename "$lock"))"
        return
    fi
    if [ "$EXTRAS" != "dev" ] && [ -n "$have" ] && [ "${have%% *}" = "requirements-dev.lock" ] \
        && [ "$(echo "$have" | cut -d' ' -f3)" = "$(echo "$want" | cut -d' ' -f3)" ]; then
        log "Python packages up to date (dev lock installed; it includes the runtime one)"
        return
    fi
    log "installing Python packages into $VENV from $(basename "$lock")"
    "$VENV/bin/python" -m pip install -q --require-hashes --no-deps -r "$lock"
    "$VENV/bin/python" -m pip install -q --no-deps -e "$ROOT"
    echo "$want" > "$stamp"
}

ensure_postgres
ensure_pgvector
ensure_pgbackrest
ensure_pgbouncer
ensure_chromium
ensure_promtool
ensure_venv
log "done"
