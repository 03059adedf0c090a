#!/usr/bin/python3
"""Pass/fail table of a two-guest interop run (run-rxe-pair.sh calls this).

    /usr/bin/python3 pair_report.py --steps pair-steps.txt --guest a:RESULTS:PCAP \
        --guest b:RESULTS:PCAP [--golden DIR] [--json OUT.json]

The first --guest is the server. A step passes when both guests' tools exit 0, the server's capture
holds RoCE frames for it, every ICRC of the step in both captures checks (icrc_check.py), every
opcode the step must produce is there, and no opcode outside its allowed set shows up.
--golden DIR: when every row passes, cut the steps that name a golden pcap into DIR (RoCE frames
only, < 96 KiB, ending on a message boundary) and list them in DIR/MANIFEST.txt.
Exit status 0 when every row passes, 1 otherwise.
"""
import argparse
import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import icrc_check  # noqa: E402

GOLDEN_MAX = 96 * 1024
# operation codes (low 5 bits) that end a message or are a message of their own
MSG_END = {0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0A, 0x0B, 0x0F, 0x10, 0x11}
STEP_RE = re.compile(r"^GNRES step (\d+) (\S+) (\S+) rc=(-?\d+) cs=(-?\d+) ?(.*?) t=[\d.]+$")


def read_steps(path):
    steps = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = [x.strip() for x in line.split("|")]
        name, tmo, must, may, golden, cmd = f
        parse = lambda s: set() if s == "-" else {int(x, 16) for x in s.split()}  # noqa: E731
        steps.append({"name": name, "tmo": int(tmo), "must": parse(must), "may": parse(may),
                      "golden": None if golden == "-" else golden, "cmd": cmd})
    return steps


def read_results(path):
    boot, steps, lines = None, {}, []
    try:
        text = open(path, errors="replace").read()
    except OSError:
        text = ""
    for line in text.splitlines():
        line = line.strip()
        lines.append(line)
        if line.startswith("GNRES boot ok"):
            boot = line
        elif line.startswith("GNRES boot FAIL"):
            boot = boot or line
        m = STEP_RE.match(line)
        if m:
            steps[int(m.group(1))] = {"name": m.group(2), "role": m.group(3),
                                      "rc": int(m.group(4)), "secs": int(m.group(5)) / 100.0,
                                      "summary": m.group(6).replace(",", " ")}
    return boot, steps, lines


def golden_cut(seg):
    recs, size = [], 24
    for sec, usec, frame in seg.roce:
        if size + 16 + len(frame) > GOLDEN_MAX:
            break
        recs.append((sec, usec, frame))
        size += 16 + len(frame)
    while recs and (icrc_check.check_frame(recs[-1][2])["opcode"] & 0x1F) not in MSG_END:
        recs.pop()
    return recs


def wire_losses(a, b):
    """Per step, RoCE frames that only one capture holds: filter-dump records what a guest sends
    before the wire and what it receives after it, so a frame in one capture only was lost on
    the way (the socket netdev is UDP: a receiving QEMU that falls behind drops datagrams)."""
    lost = collections.Counter()
    for x, y in ((a, b), (b, a)):
        other = collections.Counter(f for s in y["segs"].values() for _, _, f in s.roce)
        for step, seg in x["segs"].items():
            for _, _, f in seg.roce:
                if other[f]:
                    other[f] -= 1
                else:
                    lost[step] += 1
    return lost


def ops_str(ops):
    return " ".join("%s:%d" % (icrc_check.opcode_name(k), v) for k, v in sorted(ops.items()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", required=True)
    ap.add_argument("--guest", action="append", required=True, help="NAME:RESULTS:PCAP")
    ap.add_argument("--golden")
    ap.add_argument("--json")
    args = ap.parse_args()

    steps = read_steps(args.steps)
    guests = []
    for g in args.guest:
        name, res, pcap = g.split(":", 2)
        boot, st, _ = read_results(res)
        segs, good, bad = ([], 0, 0)
        if os.path.exists(pcap):
            segs, good, bad = icrc_check.analyse(pcap)
        guests.append({"name": name, "boot": boot, "steps": st, "pcap": pcap,
                       "segs": {s.step: s for s in segs}, "good": good, "bad": bad})
    srv, cli = guests[0], guests[-1]
    lost = wire_losses(srv, cli) if len(guests) == 2 else {}

    rows, all_ok = [], True
    for g in guests:
        ok = bool(g["boot"]) and g["boot"].startswith("GNRES boot ok")
        all_ok &= ok
        rows.append({"step": "-", "name": "boot " + g["name"], "result": "PASS" if ok else "FAIL",
                     "info": (g["boot"] or "no boot line").replace("GNRES boot ", "")})
    for i, s in enumerate(steps, 1):
        rs, rc_ = srv["steps"].get(i), cli["steps"].get(i)
        seg = srv["segs"].get(i)
        seen = dict(seg.opcodes) if seg else {}
        nframes = len(seg.roce) if seg else 0
        dups = seg.dups if seg else 0
        icrc_ok = sum(g["segs"][i].good for g in guests if i in g["segs"])
        icrc_bad = sum(g["segs"][i].bad for g in guests if i in g["segs"])
        why = []
        if not rs or rs["rc"] != 0:
            why.append("server rc=%s" % (rs["rc"] if rs else "none"))
        if not rc_ or rc_["rc"] != 0:
            why.append("client rc=%s" % (rc_["rc"] if rc_ else "none"))
        if nframes == 0:
            why.append("no RoCE frames")
        if icrc_bad:
            why.append("%d bad ICRC" % icrc_bad)
        missing = s["must"] - set(seen)
        extra = set(seen) - s["must"] - s["may"]
        if nframes and missing:
            why.append("missing " + ",".join(icrc_check.opcode_name(o) for o in sorted(missing)))
        if extra:
            why.append("unexpected " + ",".join(icrc_check.opcode_name(o) for o in sorted(extra)))
        ok = not why
        all_ok &= ok
        rows.append({"step": i, "name": s["name"], "server_rc": rs["rc"] if rs else None,
                     "client_rc": rc_["rc"] if rc_ else None,
                     "secs": rc_["secs"] if rc_ else None, "frames": nframes,
                     "icrc_ok": icrc_ok, "icrc_bad": icrc_bad, "retx": dups,
                     "lost": lost.get(i, 0),
                     "opcodes": {icrc_check.opcode_name(k): v for k, v in sorted(seen.items())},
                     "result": "PASS" if ok else "FAIL",
                     "info": "; ".join(why) if why else (rc_["summary"] if rc_ else "")})
    for g in guests:
        ok = g["bad"] == 0 and g["good"] > 0
        all_ok &= ok
        rows.append({"step": "-", "name": "icrc " + os.path.basename(g["pcap"]),
                     "result": "PASS" if ok else "FAIL",
                     "info": "ICRC OK: %d BAD: %d (zlib and scapy)" % (g["good"], g["bad"])})

    fmt = "%-4s %-18s %4s %4s %6s %6s %4s %4s %11s %-6s %s"
    print(fmt % ("step", "name", "srv", "cli", "secs", "frames", "retx", "lost", "icrc ok/bad",
                 "result", "info (client's result line, or why it failed)"))
    for r in rows:
        if r["step"] == "-":
            print(fmt % ("-", r["name"], "", "", "", "", "", "", "", r["result"], r["info"]))
            continue
        print(fmt % (
            r["step"], r["name"], "-" if r["server_rc"] is None else r["server_rc"],
            "-" if r["client_rc"] is None else r["client_rc"],
            "-" if r["secs"] is None else "%.2f" % r["secs"], r["frames"], r["retx"], r["lost"],
            "%d/%d" % (r["icrc_ok"], r["icrc_bad"]), r["result"], r["info"]))
        print("%-4s %-18s opcodes: %s" % ("", "", ops_str(srv["segs"][r["step"]].opcodes)
                                          if r["step"] in srv["segs"] else "-"))
    npass = sum(r["result"] == "PASS" for r in rows)
    print("%s: %d/%d rows pass" % ("PASS" if all_ok else "FAIL", npass, len(rows)))

    if args.golden and not all_ok:
        print("golden pcaps not updated: the run failed")
    elif args.golden:
        os.makedirs(args.golden, exist_ok=True)
        manifest = []
        for i, s in enumerate(steps, 1):
            if s["golden"] and i in srv["segs"]:
                recs = golden_cut(srv["segs"][i])
                path = os.path.join(args.golden, s["golden"])
                icrc_check.write_pcap(path, recs)
                ops = {}
                for _, _, f in recs:
                    op = f[14 + (f[14] & 15) * 4 + 8]
                    ops[op] = ops.get(op, 0) + 1
                line = "%s: step %d (%s), %d frames, %d bytes, %d retransmitted, %s" % (
                    s["golden"], i, s["cmd"], len(recs), os.path.getsize(path),
                    srv["segs"][i].dups, ops_str(ops))
                manifest.append(line)
                print("golden " + line)
        with open(os.path.join(args.golden, "MANIFEST.txt"), "w") as f:
            f.write("# made by tests/interop/run-rxe-pair.sh --update-golden from the server's capture\n")
            f.write("\n".join(manifest) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"pass": all_ok, "rows": rows}, f, indent=1)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
