#!/usr/bin/python3
"""Captures made by Linux rxe (tests/interop/golden: perftest and pingpong traffic) through
`gpunic decode`: every frame must decode and its ICRC verify, the opcodes must be the RoCE ones
the capture's tools send. Usage: decode_captures.py GPUNIC PCAP..."""
import json
import subprocess
import sys


def check(gpunic, path):
    out = subprocess.run([gpunic, "decode", path], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return f"{path}: gpunic decode exited {out.returncode}: {out.stderr.strip()}"
    frames = [json.loads(line) for line in out.stdout.splitlines()]
    if not frames:
        return f"{path}: no frames"
    for f in frames:
        if "error" in f:
            return f"{path}: frame {f['frame']} rejected: {f['error']}"
        if not f.get("icrc_ok"):
            return f"{path}: frame {f['frame']} ICRC {f.get('icrc')} != {f.get('icrc_calc')}"
        if f["transport"] not in ("RC", "UC"):
            return f"{path}: frame {f['frame']} transport {f['transport']}"
    print(f"{path}: {len(frames)} frames, every ICRC verifies")
    return None


def main():
    gpunic, paths = sys.argv[1], sys.argv[2:]
    errors = [e for e in (check(gpunic, p) for p in paths) if e]
    for e in errors:
        print("FAIL", e)
    return 1 if errors or not paths else 0


if __name__ == "__main__":
    sys.exit(main())
