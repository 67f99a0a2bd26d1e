"""cumtool with phase timers and each thread's CPU, printed to standard error at exit:

    PYTHONPATH=CHECKOUT python benchmarks/thread_cpu.py cumsum in.jsonl -q --to csv > /dev/null

The JSON Lines source's two passes (parse and spool; batches back) are marked with the wall
time and the main thread's CPU; every thread's CPU is summed by name (pools by prefix). A
thread that runs alone through a pass (the main thread, cumtool-reader, -writer, -spool) is
the serial part of that pass; a pool's CPU divides among its threads."""
import atexit, os, resource, sys, time, threading
T0 = time.perf_counter()
marks = []
def mark(what): marks.append((what, time.perf_counter() - T0, time.thread_time()))
import collections
THREAD_CPU = collections.Counter()
_orig_run = threading.Thread.run
def _run(self):
    try:
        _orig_run(self)
    finally:
        name = self.name.rsplit("_", 1)[0] if "_" in self.name else self.name
        THREAD_CPU[name] += time.thread_time()
threading.Thread.run = _run
import cumtool.formats.jsonl.jsonl as J
orig_init = J.JsonlSource.__init__
def init(self, *a, **k):
    mark("pass1 start")
    orig_init(self, *a, **k)
    mark("pass1 end")
J.JsonlSource.__init__ = init
orig_batches = J.JsonlSource.batches
def batches(self, *a, **k):
    first = True
    for b in orig_batches(self, *a, **k):
        if first:
            mark("first batch"); first = False
        yield b
    mark("last batch")
J.JsonlSource.batches = batches
def report():
    ru = resource.getrusage(resource.RUSAGE_THREAD)
    me = resource.getrusage(resource.RUSAGE_SELF)
    mark("exit")
    out = [f"{w}: {t:.3f}s (main cpu {c:.3f})" for w, t, c in marks]
    out.append(f"main thread cpu {ru.ru_utime + ru.ru_stime:.3f} (u {ru.ru_utime:.3f} s {ru.ru_stime:.3f}); process cpu {me.ru_utime + me.ru_stime:.3f}; vcs {me.ru_nvcsw} ivcs {me.ru_nivcsw}")
    out.append("threads: " + " ".join(f"{k}={v:.3f}" for k, v in sorted(THREAD_CPU.items())))
    print("\n".join(out), file=sys.stderr)
atexit.register(report)
sys.argv = ["cumtool"] + sys.argv[1:]
from cumtool.launch import main
main()
