# Sourced by the server tests (test_serve.sh, test_serve_random.sh, test_json_mode.sh), after they
# set wgt: makes the scratch folder tmp, and on exit stops the server still running (pid) and
# removes tmp. Then
#   serve_start LOG ARG...   runs "$wgt serve ARG... --port 0" in the background with its stderr in
#                            LOG, sets pid, and sets port from the server's first line (up to 120 s);
#                            a server that exits or never says its port ends the test with FAIL.
serve_start() {
    local log=$1
    shift
    "$wgt" serve "$@" --port 0 2>"$log" &
    pid=$!
    port=
    for _ in $(seq 600); do
        port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$log")
        [ -n "$port" ] && return 0
        kill -0 "$pid" 2>/dev/null || { echo "FAIL: wgt serve exited:"; cat "$log"; exit 1; }
        sleep 0.2
    done
    echo "FAIL: wgt serve did not start in 120 s"
    cat "$log"
    exit 1
}

tmp=$(mktemp -d)
pid=
serve_cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap serve_cleanup EXIT
