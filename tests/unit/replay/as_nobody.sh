#!/usr/bin/env bash
# as_nobody.sh TEST CAPTURES [ARGS...]: runs the replay test TEST with WALK_CAPTURES naming the
# captures. As root, as nobody: from a copy of both in a fresh folder nobody can read (the tree
# may sit under a folder only root enters), so the test shows it needs no privileges.
set -euo pipefail
TEST="$1" CAPTURES="$2"
shift 2
if [[ $EUID -ne 0 ]]; then
    WALK_CAPTURES="$CAPTURES" exec "$TEST" "$@"
fi
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
chmod 755 "$DIR"
cp "$TEST" "$DIR/test"
mkdir "$DIR/captures"
cp "$CAPTURES"/*.walk "$DIR/captures/"
chmod -R a+rX "$DIR"
cd "$DIR"
WALK_CAPTURES="$DIR/captures" setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all --bounding-set=-all \
    -- "$DIR/test" "$@"
