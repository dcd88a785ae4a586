#!/usr/bin/env python3
"""Seeds for the targets over fuzz_rec.h's recordings: a few recordings as
record would write them (spans with samples inside, off-CPU blocks with
their wakers and scheduler records, OTel contexts, forks and JIT code,
hostile names), in the byte language fuzz_rec.h reads.

    tests/fuzz/rec_seeds.py DIR...   writes the seeds into each DIR
"""
import struct
import sys

# fz_ip kinds
K, MOD, USER, JIT, CTX = 0, 1, 2, 4, 6


class Rec:
    def __init__(self, opts=0, spans=("work",), host=b"fuzzhost", counters=b"task-clock,context-switches",
                 jit=b"7f0000001000 100 jit_a\n7f0000001100 80 jit_b\n"):
        b = bytearray([opts, len(spans)])  # nspan = 1 + byte % 4: the names, then otel
        b += self.s(host)
        for n in spans:
            b += self.s(n.encode() if isinstance(n, str) else n)
        b += self.s(counters)
        b += struct.pack("<H", len(jit)) + jit
        self.b = b

    @staticmethod
    def s(v):
        return bytes([len(v)]) + v

    @staticmethod
    def thread(tid):
        return bytes([tid - 100])

    @staticmethod
    def time(delta):
        """ns from now, a multiple of 97; negative: behind."""
        q = abs(delta) // 97
        return struct.pack("<H", (0x8000 | min(q, 0x7fff)) if delta < 0 else min(q, 0x7fff))

    @staticmethod
    def ip(kind, off):
        return bytes([kind]) + struct.pack("<H", off)

    def chain(self, frames):
        out = bytes([len(frames)])
        for k, off in frames:
            out += self.ip(k, off)
        return out

    def op(self, kind, tid, adv_us=0, flag=0):
        self.b += bytes([(adv_us << 5) | (flag << 4) | kind]) + self.thread(tid)

    def comm(self, tid, name, exec_=False, adv=0):
        self.op(0, tid, adv, 1 if exec_ else 0)
        self.b += self.s(name)

    def mmap(self, tid, which, pages=16):
        self.op(1, tid)
        self.b += bytes([which, pages - 1])

    def fork(self, tid, from_second=False):
        self.op(2, tid, 0, 1 if from_second else 0)

    def exit(self, tid):
        self.op(3, tid)

    def sample(self, tid, leaf, frames, adv=1, dt=0, period_us=1):
        self.op(4, tid, adv)
        self.b += self.ip(*leaf) + self.time(dt) + struct.pack("<H", period_us) + self.chain(frames)

    def offcpu(self, tid, ns, frames, adv=1, dt=0, sum_=False):
        self.op(7, tid, adv)
        self.b += bytes([1 if sum_ else 0]) + self.ip(K, 0x2000) + self.time(dt)
        self.b += struct.pack("<I", ns // 31)[:3] + self.chain(frames)

    def waker(self, wakee, waker, ns, comm=b"waker", ctx=1, frames=((K, 0x1000), (CTX, 0), (USER, 0x40))):
        self.op(8, wakee)
        self.b += self.thread(waker) + self.time(0) + self.time(-ns) + bytes([ctx]) + self.s(comm)
        self.b += self.ip(K, 0x1000) + struct.pack("<I", ns // 31)[:3] + self.chain(frames)

    def sched(self, tid, state, ns, run_delay, adv=1):
        self.op(9, tid, adv)
        self.b += bytes([state | 4]) + struct.pack("<I", run_delay // 7)[:3] + self.time(0)
        self.b += struct.pack("<I", ns // 31)[:3]

    def span(self, idx, tid, start, dur, ids=None, attrs=None, split=None, adv=0):
        """start: ns from now (negative: behind); dur a multiple of 211 ns."""
        self.op(10, tid, adv)
        flags = 0
        if ids is not None:
            flags |= 0x20
        if attrs is not None:
            flags |= 0x40
        self.b += bytes([idx]) + self.thread(tid) + self.time(start) + bytes([flags])
        self.b += struct.pack("<H", min(dur // 211, 0xffff)) + self.ip(USER, 0x10) + bytes([3, 0])
        if idx != self.nspan - 1:
            self.b += bytes([3])  # source: uprobe
        if ids is not None:
            self.b += bytes([ids])
        if attrs is not None:
            self.b += bytes([len(attrs)]) + attrs
        if idx & 1:
            on, runq, blocked = split or (dur // 2, dur // 8, dur // 8)
            self.b += bytes([1]) + b"".join(struct.pack("<I", v // 13)[:3] for v in (on, runq, blocked))
        self.b += bytes([0])

    def pctx(self, tid, service, keys):
        self.op(12, tid)
        self.b += self.s(service) + bytes([len(keys)])
        for k in keys:
            if k == "span.name":
                self.b += self.s(b"") + bytes([0])
            else:
                self.b += self.s(k) + bytes([1])

    def ext(self, tid, start, end, name, ids=0):
        self.op(13, tid)
        self.b += self.time(start) + self.time(end) + bytes([ids]) + self.thread(tid) + self.s(name)

    def round(self):
        self.op(14, 100)

    @property
    def nspan(self):
        return self.b[1] % 4 + 1


def spans_and_samples(opts):
    r = Rec(opts, spans=("handle", "query", "flush"))
    r.comm(101, b"server")
    r.mmap(101, 0)
    for i in range(40):
        tid = 100 + i % 4
        r.sample(tid, (USER, 0x100 + i % 5), [(USER, 0x100 + i % 5), (USER, 0x200), (USER, 0x300)], adv=3)
        if i % 8 == 0:
            r.span(i % 3, tid, -20000, 30000)
            r.span(0, tid, -15000, 5000)  # nested
        if i % 10 == 9:
            r.round()
    return r.b


def offcpu_wakers(opts):
    r = Rec(opts, spans=("req", "db"))
    for i in range(20):
        r.sample(100, (USER, 0x400), [(K, 0x2000), (CTX, 0), (USER, 0x400), (USER, 0x500)], adv=2)
        r.offcpu(100, 4000 + i * 31, [(K, 0x2000), (CTX, 0), (USER, 0x600)], adv=1)
        r.waker(100, 102, 4000 + i * 31)
        r.sched(100, 1 + i % 2, 4000, 1000 * i)
        if i % 4 == 3:
            r.span(1, 100, -30000, 25000)
            r.round()
    r.offcpu(101, 99999, [(K, 0x2000)], sum_=True)
    return r.b


def otel(opts):
    r = Rec(opts, spans=())
    r.pctx(100, b"checkout", [b"http.route", "span.name", b"user.id"])
    for i in range(16):
        r.sample(100, (JIT, 0x10), [(JIT, 0x10), (JIT, 0x120)], adv=2)
        r.span(0, 100, -6000, 5000, ids=4 * (i % 3) + 1, attrs=bytes([0, 4]) + b"/api" + bytes([1, 3]) + b"GET")
        if i % 5 == 4:
            r.round()
    r.pctx(102, b"\xff\xfe bad", [b"k\nx", b"</script>"])
    r.span(0, 102, -3000, 2000, ids=5, attrs=bytes([0, 2]) + b"<\xff" + bytes([9, 40]))
    return r.b


def hostile_names(opts):
    jit = b"7f0000001000 40 </script><!--\n7f0000001040 40 a;b c\x1b[31m\xff\xfe\n7f0000001080 40 \xe2\x80\xa8&amp\"'\n"
    r = Rec(opts, spans=("x;y\x1b", "\xc3(", "ok"), host=b"h<o>st\xff", counters=b"c,\xffd,<e>", jit=jit)
    r.comm(100, b"co;mm\n\x1b[2J")
    r.comm(102, b"\xff\xfe\xfd", exec_=True)
    r.mmap(100, 1)
    for i in range(12):
        r.sample(100 + i % 3, (JIT, 0x40 * (i % 3)), [(JIT, 0x40 * (i % 3)), (JIT, 0x80), (USER, 0x10)], adv=2)
        r.span(i % 4, 100 + i % 3, -5000, 8000)
    r.ext(100, -30000, 0, b"ext;\n<name>\xff", ids=3)
    r.ext(101, -20000, -1000, b"plain")
    return r.b


def forks(opts):
    r = Rec(opts, spans=("job",))
    r.comm(100, b"parent")
    r.mmap(100, 0)
    r.mmap(100, 1)
    r.fork(104)
    r.comm(104, b"child", exec_=True)
    r.mmap(104, 0x18)
    for i in range(10):
        r.sample(104, (USER, 0x800 + i), [(USER, 0x800 + i), (USER, 0x900)], adv=5)
        r.sample(100, (JIT, 0x20), [(JIT, 0x20)], adv=1)
        r.span(0, 104, -4000, 3000)
    r.exit(104)
    r.sample(104, (USER, 0x800), [(USER, 0x800)], adv=5)
    r.round()
    return r.b


SEEDS = {"spans-samples": spans_and_samples, "offcpu-wakers": offcpu_wakers, "otel": otel,
         "hostile-names": hostile_names, "forks-jit": forks}

if __name__ == "__main__":
    for d in sys.argv[1:]:
        for name, fn in SEEDS.items():
            # The option byte: each target reads its own bits; seeds cover a few.
            for opts in (0, 1, 4, 9, 0x32):
                with open(f"{d}/{name}-{opts:02x}", "wb") as f:
                    f.write(fn(opts))
