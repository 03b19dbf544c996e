#!/usr/bin/env python3
"""Passes a `cargo test` log through unchanged and writes how long each test took.

With one test thread, libtest ends each test's line ("test NAME ... ok") when the test ends, so
the time between two such lines is the later test's duration. Written to the file given as the
only argument as `SECONDS<TAB>BINARY<TAB>NAME<TAB>RESULT`, slowest first, when the log ends;
`scripts/test-all.sh` prints the slowest of them, so every CI log says where its time went.
"""
import re
import sys
import time

TEST = re.compile(r"^test (\S+) \.\.\. (\w+)")
RUNNING = re.compile(r"^\s*Running (\S+)")


def main() -> None:
    out = sys.argv[1]
    rows = []
    binary = "?"
    last = time.monotonic()
    for line in sys.stdin:
        sys.stdout.write(line)
        sys.stdout.flush()
        now = time.monotonic()
        m = RUNNING.match(line)
        if m:
            binary, last = m.group(1), now
            continue
        m = TEST.match(line)
        if m:
            rows.append((now - last, binary, m.group(1), m.group(2)))
            last = now
    rows.sort(reverse=True)
    with open(out, "w") as f:
        for secs, b, name, result in rows:
            f.write(f"{secs:.1f}\t{b}\t{name}\t{result}\n")


if __name__ == "__main__":
    main()
