#!/usr/bin/env python3
"""Helper of scripts/bench-peers.sh (docs/peers.md): measures a benchmark client's process tree
against the built-in simulator over a steady window, times its startup through a logging TCP
proxy, and prints the tables.

  bench_peers.py measure --metrics URL --n N --out FILE [--window 10] -- CMD...
  bench_peers.py startup --listen PORT --upstream PORT --out FILE [--wait-exit] -- CMD...
  bench_peers.py timeline --out FILE [--mark NAME=REGEX]... [--until REGEX] -- CMD...
  bench_peers.py quiet [--max-busy 0.1] [--span 3] [--timeout 900]
  bench_peers.py valid FILE
  bench_peers.py reported llmib DIR | vllm FILE
  bench_peers.py table RESULTS_DIR

`measure` runs CMD (already pinned by its caller) and, polling the simulator's /metrics every
50 ms, waits until vllm:num_requests_running >= N with nothing waiting and no prompt tokens
added (vllm:prompt_tokens_total still) has held for --sustain seconds, then waits --settle
seconds more; the window is the next --window seconds. At its two
ends it reads, back to back, the simulator's vllm:generation_tokens_total and the CPU time
(utime + stime, and cutime + cstime of reaped children) of CMD's whole process tree from
/proc/<pid>/stat. The same rule opens the window of both tools, so both are measured over the
same length of steady streaming, after their own startup, prompt building and ramp. Peak RSS:
the larger of VmHWM summed over the tree (polled) and the ru_maxrss that wait4 returns for CMD.
"""

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

CLK_TCK = os.sysconf("SC_CLK_TCK")
METRIC_RE = re.compile(r"^(vllm:[a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+|NaN)$")


def scrape(url, tries=3):
    """Sums of the simulator's vllm:* series by name (an overloaded simulator answers late)."""
    for i in range(tries):
        try:
            with urllib.request.urlopen(url, timeout=20) as r:
                text = r.read().decode()
            break
        except OSError:
            if i == tries - 1:
                raise
            time.sleep(0.5)
    out = {}
    for line in text.splitlines():
        m = METRIC_RE.match(line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(3))
    return out


def try_scrape(url):
    try:
        return scrape(url, tries=1)
    except OSError:
        return None


def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree(root):
    kids = children_map()
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def stat_cpu(pid, with_children):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): utime 14, stime 15, cutime 16, cstime 17
    t = int(fields[11]) + int(fields[12])
    if with_children:
        t += int(fields[13]) + int(fields[14])
    return t / CLK_TCK


def tree_cpu(root):
    total = 0.0
    for p in tree(root):
        try:
            total += stat_cpu(p, True)
        except OSError:
            pass
    return total


def tree_hwm_kb(root):
    total = 0
    for p in tree(root):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_ticks():
    """Per CPU: (busy ticks: user + nice + system, all ticks) from /proc/stat."""
    out = {}
    for line in open("/proc/stat"):
        f = line.split()
        if f[0].startswith("cpu") and f[0] != "cpu":
            v = [int(x) for x in f[1:9]]
            out[int(f[0][3:])] = (v[0] + v[1] + v[2], sum(v))
    return out


def cmd_quiet(args):
    """Waits until every CPU was less than --max-busy busy over --span seconds (others' builds
    and tests share this machine); exits 1 after --timeout seconds without such a span."""
    import argparse

    ap = argparse.ArgumentParser(prog="bench_peers.py quiet")
    ap.add_argument("--max-busy", type=float, default=0.10)
    ap.add_argument("--span", type=float, default=3.0)
    ap.add_argument("--timeout", type=float, default=900.0)
    a = ap.parse_args(args)
    t_end = time.monotonic() + a.timeout
    while time.monotonic() < t_end:
        t0 = cpu_ticks()
        time.sleep(a.span)
        t1 = cpu_ticks()
        busy = max((t1[c][0] - t0[c][0]) / max(t1[c][1] - t0[c][1], 1) for c in t1)
        if busy < a.max_busy:
            return 0
    print(f"no quiet {a.span} s span in {a.timeout} s", file=sys.stderr)
    return 1


def tcp_backlog(port):
    """Bytes queued on loopback connections to `port`: the clients' unread receive queues plus
    the server's unacknowledged send queues (/proc/net/tcp{,6}). Growing over a window means
    the client is not keeping up with what the server writes."""
    total = 0
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(name).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            lport = int(f[1].rsplit(":", 1)[1], 16)
            rport = int(f[2].rsplit(":", 1)[1], 16)
            tx, rx = (int(x, 16) for x in f[4].split(":"))
            if rport == port:
                total += rx
            elif lport == port:
                total += tx
    return total


def cmd_measure(args):
    import argparse

    ap = argparse.ArgumentParser(prog="bench_peers.py measure")
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--sustain", type=float, default=1.0)
    ap.add_argument("--settle", type=float, default=1.0)
    ap.add_argument("--ramp-timeout", type=float, default=120.0)
    ap.add_argument("--exit-timeout", type=float, default=120.0)
    ap.add_argument("--log", default=os.devnull)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reported", help="llmib:DIR or vllm:FILE, the tool's own figures")
    ap.add_argument("--client-cpu", type=int, help="the CPU CMD is pinned to")
    ap.add_argument("--step-ms", type=float, help="the simulator's decode step (recorded)")
    ap.add_argument("--hog", type=float, default=0.0,
                    help="seconds of a busy loop on --client-cpu from the window's start "
                         "(a robustness case: does the client catch up afterwards?)")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args(args)

    res = {"n": a.n, "cmd": a.cmd, "window_target_s": a.window, "step_ms": a.step_ms}
    logf = open(a.log, "wb")
    t_exec = time.monotonic()
    p = subprocess.Popen(a.cmd, stdout=logf, stderr=subprocess.STDOUT)
    peak_kb = 0
    rusage = None
    status = None

    def poll_exit():
        nonlocal rusage, status
        if rusage is not None:
            return True
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            status, rusage = st, ru
            return True
        return False

    def hwm():
        nonlocal peak_kb
        if rusage is None:
            peak_kb = max(peak_kb, tree_hwm_kb(p.pid))

    # 1. ramp: running >= N, nothing waiting and no prompt prefilled (the prompt-token counter
    # still) for `sustain` seconds. The running gauge alone is not enough: the vLLM-flavoured
    # simulator counts a request as running from its admission, before its prefill, and
    # prefills one prompt per pass between decode steps (N = 1024 at 4 ms: about 5 s of ramp)
    since = None
    last_prompt = None
    while True:
        if poll_exit():
            res["error"] = "exited before a steady window"
            break
        now = time.monotonic()
        if now - t_exec > a.ramp_timeout:
            res["error"] = f"no steady state within {a.ramp_timeout} s"
            break
        m = try_scrape(a.metrics) or {}
        prompt = m.get("vllm:prompt_tokens_total")
        ok = (m.get("vllm:num_requests_running", 0) >= a.n
              and m.get("vllm:num_requests_waiting", 0) == 0
              and prompt is not None and prompt == last_prompt)
        last_prompt = prompt
        since = (since or now) if ok else None
        hwm()
        if since is not None and now - since >= a.sustain:
            break
        time.sleep(0.05)

    if "error" not in res:
        t_settle = time.monotonic() + a.settle
        while time.monotonic() < t_settle:
            hwm()
            time.sleep(0.05)
        port = int(re.match(r"https?://[^:/]+:(\d+)", a.metrics).group(1))
        load0 = open("/proc/loadavg").read().split()[0]
        s0 = time.monotonic()
        m0 = scrape(a.metrics)
        c0 = tree_cpu(p.pid)
        t0 = time.monotonic()
        b0, k0 = tcp_backlog(port), cpu_ticks()
        if a.hog > 0:
            subprocess.Popen(["taskset", "-c", str(a.client_cpu), "timeout", str(a.hog),
                              "sh", "-c", "while :; do :; done"])
            res["hog_s"] = a.hog
        min_running, max_waiting = float("inf"), 0.0
        while time.monotonic() < t0 + a.window:
            time.sleep(max(0.0, min(0.1, t0 + a.window - time.monotonic())))
            if poll_exit():
                res["error"] = "exited inside the window"
                break
            mm = try_scrape(a.metrics)
            if mm is None:
                continue
            min_running = min(min_running, mm.get("vllm:num_requests_running", 0))
            max_waiting = max(max_waiting, mm.get("vllm:num_requests_waiting", 0))
            hwm()
        if "error" not in res:
            s1 = time.monotonic()
            m1 = scrape(a.metrics)
            c1 = tree_cpu(p.pid)
            t1 = time.monotonic()
            # how long the simulator took to answer each counter read: its counters belong to
            # some instant inside those spans, the CPU readings to their ends
            res["counter_read_ms"] = [round((t0 - s0) * 1e3, 1), round((t1 - s1) * 1e3, 1)]
            res["peak_rss_window_mb"] = round(tree_hwm_kb(p.pid) / 1024, 1)
            b1, k1 = tcp_backlog(port), cpu_ticks()
            tokens = m1["vllm:generation_tokens_total"] - m0["vllm:generation_tokens_total"]
            cpu = c1 - c0
            if a.client_cpu is not None:
                c = a.client_cpu
                span = (k1[c][1] - k0[c][1]) / CLK_TCK
                busy = (k1[c][0] - k0[c][0]) / CLK_TCK
                # user + system time on the client's CPU that was not the client's
                res["foreign_frac"] = round(max(0.0, busy - cpu) / max(span, 1e-9), 3)
            res.update(
                window_start_s=round(t0 - t_exec, 3),
                window_s=round(t1 - t0, 3),
                cpu_s=round(cpu, 3),
                cores=round(cpu / (t1 - t0), 3),
                tokens=int(tokens),
                window_tok_s=round(tokens / (t1 - t0), 1),
                us_per_token=round(cpu / tokens * 1e6, 2) if tokens else None,
                min_running=min_running,
                max_waiting=max_waiting,
                backlog_kb=[round(b0 / 1e3, 1), round(b1 / 1e3, 1)],
                # kept up: the bytes queued towards the client grew by less than 1 MB
                kept_up=(b1 - b0) < 1e6,
                steady=min_running >= a.n and max_waiting == 0,
                load1=[float(load0), float(open("/proc/loadavg").read().split()[0])],
            )

    # 2. let the tool finish (it reports its own figures at the end)
    deadline = time.monotonic() + a.exit_timeout
    while not poll_exit():
        hwm()
        if time.monotonic() > deadline:
            res["error"] = res.get("error", "") + " (killed after exit timeout)"
            p.kill()
            _, status, rusage = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    try:
        end = scrape(a.metrics)
        res["sim_prompt_tokens_total"] = end.get("vllm:prompt_tokens_total")
        res["sim_generation_tokens_total"] = end.get("vllm:generation_tokens_total")
    except OSError as e:
        res["sim_counters_error"] = str(e)
    res["rc"] = os.waitstatus_to_exitcode(status)
    res["wall_s"] = round(time.monotonic() - t_exec, 3)
    res["peak_rss_mb"] = round(max(peak_kb, rusage.ru_maxrss) / 1024, 1)
    res["total_cpu_s"] = round(rusage.ru_utime + rusage.ru_stime, 3)
    p.returncode = res["rc"]
    if a.reported:
        kind, path = a.reported.split(":", 1)
        try:
            res.update(reported(kind, path))
        except (OSError, ValueError) as e:
            res["reported_error"] = str(e)
    with open(a.out, "w") as f:
        json.dump(res, f)
    print(json.dumps({k: v for k, v in res.items() if k != "cmd"}))
    return 0 if "error" not in res and res["rc"] == 0 else 1


GEN_RE = re.compile(rb"POST /v1/(chat/)?completions ")
REQ_RE = re.compile(rb"(?:^|\r\n\r\n)((?:GET|POST) [^ ]+)")


async def startup_once(listen, upstream, cmd, wait_exit, log):
    marks = {}
    requests = []
    t_exec = None

    def mark(name):
        if name not in marks and t_exec is not None:
            marks[name] = time.monotonic() - t_exec

    async def pipe(reader, writer, inspect):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if inspect:
                    mark("first_byte")
                    if GEN_RE.search(data):
                        mark("first_generation")
                    for line in REQ_RE.findall(data):
                        if t_exec is not None and len(requests) < 50:
                            requests.append([round(time.monotonic() - t_exec, 4),
                                             line.decode(errors="replace")])
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass

    async def handle(cr, cw):
        mark("first_connect")
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", upstream)
        except OSError:
            cw.close()
            return
        await asyncio.gather(pipe(cr, uw, True), pipe(ur, cw, False))

    server = await asyncio.start_server(handle, "127.0.0.1", listen) if listen else None
    out = open(log, "ab")
    t_exec = time.monotonic()
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=out, stderr=subprocess.STDOUT)
    if wait_exit:
        await proc.wait()
        marks["exit"] = time.monotonic() - t_exec
        marks["rc"] = proc.returncode
    else:
        while "first_generation" not in marks and proc.returncode is None:
            await asyncio.sleep(0.001)
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    if server:
        server.close()
        marks["requests"] = requests
    return marks


def cmd_startup(args):
    import argparse

    ap = argparse.ArgumentParser(prog="bench_peers.py startup")
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--upstream", type=int, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--wait-exit", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--log", default=os.devnull)
    ap.add_argument("--out", required=True)
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args(args)
    runs = []
    for _ in range(a.runs):
        runs.append(asyncio.run(startup_once(a.listen, a.upstream, a.cmd, a.wait_exit, a.log)))
        time.sleep(0.3)
    res = {"label": a.label, "cmd": a.cmd, "runs": runs}
    for k in ("first_connect", "first_byte", "first_generation", "exit"):
        v = sorted(r[k] for r in runs if k in r)
        if v:
            res[k + "_median_s"] = round(v[len(v) // 2], 4)
            res[k + "_range_s"] = [round(v[0], 4), round(v[-1], 4)]
    with open(a.out, "w") as f:
        json.dump(res, f)
    print(json.dumps({k: v for k, v in res.items() if k not in ("cmd", "runs")}))
    return 0


def cmd_timeline(args):
    """Runs CMD and stamps each line it prints with the seconds since exec (both tools flush
    stdout by line); --mark NAME=REGEX records the first matching line's time, --until REGEX
    kills CMD at the first line that matches it."""
    import argparse

    ap = argparse.ArgumentParser(prog="bench_peers.py timeline")
    ap.add_argument("--mark", action="append", default=[])
    ap.add_argument("--until")
    ap.add_argument("--label", default="")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--log", default=os.devnull)
    ap.add_argument("--out", required=True)
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args(args)
    marks = [(m.split("=", 1)[0], re.compile(m.split("=", 1)[1])) for m in a.mark]
    until = re.compile(a.until) if a.until else None
    res = {"label": a.label, "cmd": a.cmd, "marks": {}}
    log = open(a.log, "w")
    t_exec = time.monotonic()
    p = subprocess.Popen(a.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    killed = False
    import threading

    def on_timeout():
        res["timed_out"] = True
        p.kill()

    timer = threading.Timer(a.timeout, on_timeout)
    timer.start()
    for raw in p.stdout:
        t = time.monotonic() - t_exec
        line = raw.decode(errors="replace").rstrip("\n")
        log.write(f"{t:9.4f} {line}\n")
        for name, rx in marks:
            if name not in res["marks"] and rx.search(line):
                res["marks"][name] = round(t, 4)
        if until and until.search(line):
            p.kill()
            killed = True
            break
    p.wait()
    timer.cancel()
    res["exit_s"] = round(time.monotonic() - t_exec, 4)
    res["rc"] = p.returncode
    res["killed"] = killed
    with open(a.out, "w") as f:
        json.dump(res, f)
    print(json.dumps({k: v for k, v in res.items() if k != "cmd"}))
    return 0


def reported(kind, path):
    """The tool's own output tok/s (and vllm-bench's steady-state one)."""
    if kind == "llmib":
        rows = [json.loads(l) for l in open(os.path.join(path, "cells.jsonl")) if l.strip()]
        rows = [r for r in rows if r.get("phase") == "decode"]
        if not rows:
            return {}
        r = rows[-1]
        return {"reported_tok_s": r.get("total_tok_per_s"), "status": r.get("status"),
                "reported_window_s": r.get("measured_s")}
    d = json.load(open(path))
    ss = d.get("steady_state") or {}
    return {"reported_tok_s": d.get("output_throughput"),
            "reported_steady_tok_s": ss.get("output_throughput"),
            "reported_duration_s": d.get("duration"),
            "reported_steady_window_s": (ss.get("window") or {}).get("duration_s"),
            "failed": d.get("failed")}


def cmd_reported(args):
    print(json.dumps(reported(args[0], args[1])))
    return 0


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def verdict(r):
    """Why a window does not count, or `yes`."""
    why = []
    if r.get("error"):
        why.append(r["error"].strip())
    if not r.get("steady"):
        why.append("not all N running throughout")
    if not r.get("kept_up"):
        why.append(f"client fell behind (backlog kB {r.get('backlog_kb')})")
    rep, win = r.get("reported_tok_s"), r.get("window_tok_s")
    if r.get("tool") == "llmib" and rep and win and abs(rep - win) > 0.05 * win:
        why.append(f"the client counted {rep:,.0f} tok/s, the simulator's counter "
                   f"{win:,.0f} (an overloaded simulator counts tokens it has not sent)")
    lat = r.get("counter_read_ms") or [0, 0]
    if max(lat) > 0.01 * 1e3 * (r.get("window_s") or 10):
        why.append(f"the simulator answered its counters late ({lat} ms)")
    if (r.get("foreign_frac") or 0) > 0.05:
        why.append(f"other processes took {r['foreign_frac']:.0%} of the client's CPU")
    return "yes" if not why else "NO: " + "; ".join(why)


def cmd_valid(args):
    """Exit 0 when the measurement in FILE counts, else print why and exit 1."""
    r = json.load(open(args[0]))
    r["tool"] = "llmib" if os.path.basename(args[0]).startswith("llmib") else "other"
    v = verdict(r)
    if v != "yes":
        print(v, file=sys.stderr)
        return 1
    return 0


def results_named(d, prefix):
    """The JSON results in d whose file names start with prefix, in name order."""
    return [json.load(open(os.path.join(d, n))) for n in sorted(os.listdir(d))
            if n.startswith(prefix) and n.endswith(".json")]


def cmd_table(args):
    d = args[0]
    groups = {}
    for name in sorted(os.listdir(d)):
        m = re.match(r"^(llmib|vllm-bench)-n(\d+)(?:-r(\d+))?\.json$", name)
        if m:
            r = json.load(open(os.path.join(d, name)))
            r["tool"], r["n"] = m.group(1), int(m.group(2))
            groups.setdefault((r["n"], r["tool"] != "llmib"), []).append(r)
    print("| N | step ms | tool | runs | µs CPU / token | client cores | window tok/s (sim) "
          "| peak RSS MB: window end, run | reported tok/s | reported steady tok/s "
          "| runs that count |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|")

    def med(rs, k, spec):
        v = sorted(r[k] for r in rs if r.get(k) is not None)
        if not v:
            return "—"
        m = format(v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2, spec)
        return m if len(v) == 1 else f"{m} ({format(v[0], spec)}–{format(v[-1], spec)})"

    for key in sorted(groups):
        rs = groups[key]
        ok = [r for r in rs if verdict(r) == "yes"]
        use = ok or rs
        tool = "llm-inference-bench" if rs[0]["tool"] == "llmib" else "vllm-bench"
        why = "" if ok else " — none: " + verdict(rs[-1])
        print(f"| {rs[0]['n']} | {fmt(rs[0].get('step_ms'), 'g')} | {tool} | {len(use)} "
              f"| {med(use, 'us_per_token', '.2f')} | {med(use, 'cores', '.2f')} "
              f"| {med(use, 'window_tok_s', ',.0f')} "
              f"| {med(use, 'peak_rss_window_mb', '.0f')}, {med(use, 'peak_rss_mb', '.0f')} "
              f"| {med(use, 'reported_tok_s', ',.0f')} | {med(use, 'reported_steady_tok_s', ',.0f')} "
              f"| {len(ok)} of {len(rs)}{why} |")
    hogs = []
    for name in sorted(os.listdir(d)):
        m = re.match(r"^hog-(llmib|vllm-bench)-n(\d+)\.json$", name)
        if m:
            r = json.load(open(os.path.join(d, name)))
            r["tool"], r["n"] = m.group(1), int(m.group(2))
            hogs.append(r)
    if hogs:
        print()
        print("| hog case | N | busy loop s | window tok/s (sim) | reported tok/s "
              "| backlog kB at window start, end | wall s | client CPU s in all |")
        print("|---|---:|---:|---:|---:|---|---:|---:|")
        for r in hogs:
            tool = "llm-inference-bench" if r["tool"] == "llmib" else "vllm-bench"
            print(f"| {tool} | {r['n']} | {r.get('hog_s')} | {fmt(r.get('window_tok_s'), ',.0f')} "
                  f"| {fmt(r.get('reported_tok_s'), ',.0f')} | {r.get('backlog_kb')} "
                  f"| {fmt(r.get('wall_s'), '.1f')} | {fmt(r.get('total_cpu_s'), '.1f')} |")
    starts = results_named(d, "startup-")
    if starts:
        print()
        print("| startup case | first connect s | first generation request s | exit s |")
        print("|---|---:|---:|---:|")
        for s in starts:
            print(f"| {s['label']} | {fmt(s.get('first_connect_median_s'), '.4f')} "
                  f"| {fmt(s.get('first_generation_median_s'), '.4f')} "
                  f"| {fmt(s.get('exit_median_s'), '.3f')} |")
    proms = results_named(d, "prompts-")
    if proms:
        print()
        print("| prompts case | line marks, s after exec | exit s | exit code |")
        print("|---|---|---:|---:|")
        for p in proms:
            marks = ", ".join(f"{k} {v:.3f}" for k, v in p.get("marks", {}).items()) or "—"
            print(f"| {p['label']} | {marks} | {p['exit_s']:.3f} "
                  f"| {p['rc']}{' (killed on purpose)' if p.get('killed') else ''} |")
    return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "measure":
        return cmd_measure(rest)
    if cmd == "startup":
        return cmd_startup(rest)
    if cmd == "valid":
        return cmd_valid(rest)
    if cmd == "quiet":
        return cmd_quiet(rest)
    if cmd == "timeline":
        return cmd_timeline(rest)
    if cmd == "reported":
        return cmd_reported(rest)
    if cmd == "table":
        return cmd_table(rest)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
