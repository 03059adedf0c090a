# shellcheck shell=bash
# Helpers the command-line test scripts share. Source it once WORK (the folder whose *.out and
# *.err logs a failure shows) and, for check_json, PY (a python3) are set.

# free_tcp_port: a TCP port on 127.0.0.1 that nobody holds now, drawn below the kernel's
# ephemeral range: a port inside that range can be taken at any moment by another program's
# outgoing connection, and a listener of a test then failed with "Address already in use" on
# a busy machine (CI).
free_tcp_port() {
	"$PY" - <<'PYEOF'
import random, socket
lo = 32768
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    pass
top = max(lo - 1, 4096)
for _ in range(500):
    port = random.randint(max(1024, top - 16000), top)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    finally:
        s.close()
    print(port)
    break
PYEOF
}

# fail MSG...: say why, show the end of every log under $WORK (FAIL_TAIL lines, default 30),
# exit 1
fail() {
	echo "FAIL: $*" >&2
	for f in "$WORK"/*.out "$WORK"/*.err; do
		[ -s "$f" ] && { echo "--- $f" >&2; tail -"${FAIL_TAIL:-30}" "$f" >&2; }
	done
	exit 1
}

# check_json FILE EXPR...: each Python expression, with `j` the parsed FILE (`rows` its "table",
# if any; `top` its "meta", summary.json's header, or else j itself), must be true; the first lines of FILE are shown when one is not. A script
# that adds expressions of its own to every check calls json_checks, under its own check_json.
check_json() {
	json_checks "$@"
}

json_checks() {
	local file=$1
	shift
	"$PY" - "$file" "$@" <<'PYEOF' || fail "JSON checks on $file"
import json, sys
with open(sys.argv[1]) as f:
    text = f.read()
j = json.loads(text)
rows = j.get("table", []) if isinstance(j, dict) else []
top = j["meta"] if isinstance(j, dict) and "meta" in j else j
ok = True
for expr in sys.argv[2:]:
    try:
        good = eval(expr, {"j": j, "rows": rows, "top": top})
    except Exception as e:
        good = False
        print("error evaluating %s: %r" % (expr, e), file=sys.stderr)
    if not good:
        ok = False
        print("check failed: %s" % expr, file=sys.stderr)
if not ok:
    print(text[:6000], file=sys.stderr)
sys.exit(0 if ok else 1)
PYEOF
}
