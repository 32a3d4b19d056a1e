"""fleet_core.c's fleet in Python, with its state laid out four ways.

What does a Python round cost as the fleet outgrows the caches, when the state a round
touches is a few cache lines rather than a few dozen scattered objects (docs/PERFORMANCE.md,
"Fleet scale")? Not the project's simulator and not exact: the structure of
benchmarks/probes/fleet_core.c (closed-loop devices, two-choice routing, per-server inbound
lists, FCFS batches of at most 32, trace-like acceptance, two jittered link draws per round
from 4 buffered draws per session). The four variants simulate the same events (the same
rounds, from the same draws); only where the state lives differs:

* ``objects``: a session is a slotted object allocated per request (floats as separate
  float objects, its draws a list), its device an object, its blocks in flight tuples;
* ``arrays``: a session is 8 fields and 4 draws in its server's slot region of one
  ``array('d')`` (16 doubles, 128 bytes), with its KV length, draw index and device in
  three more arrays; blocks in flight are (time, slot) tuples;
* ``flat``: as ``arrays``, with everything a session has in its 128-byte record, and
  blocks in flight in two arrays per server (times and slots);
* ``calendar``: as ``flat``, with the 100,000-entry heap of requests and think times
  replaced by a calendar queue (buckets of 8 / N seconds; the same order as the heap).

Each fleet size runs the same simulated seconds, the smaller fleets as 100,000 / N runs
with seeds 0, 1, ..., so that every size counts about the same rounds from the same ramp;
the variants and sizes are interleaved, ``repeats`` times, and the summary gives each
one's range of CPU nanoseconds per round and, in brackets, its rate as a share of its own
2,000-device rate (the range pairs the extremes; then the ratio of the medians).

    python benchmarks/probes/fleet_core.py [simulated seconds, default 1] [repeats, default 3]
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
import statistics
import sys
import time
from array import array
from collections import deque
from collections.abc import Callable

GAMMA = 4
SLOTS = 128  # session slots per server
MAXB = 32
RUNS = [(k * 7) % 6 for k in range(64)]
F = 16  # doubles per session record: 8 fields, 8 buffered draws
COMMITTED, OUT, SERVER, ENQ, NET, QS, VS, DS, KV, NEXT, OWNER = range(11)
DRAWS = 4  # flat: buffered draws in the record (doubles 12-15)


class Session:
    __slots__ = (
        "committed",
        "device",
        "draws",
        "ds",
        "enq",
        "kv",
        "net",
        "next",
        "out",
        "qs",
        "server",
        "vs",
    )

    def __init__(self, out: float, server: int, device: Device) -> None:
        self.committed = 0.0
        self.out = out
        self.server = server
        self.enq = self.net = self.qs = self.vs = self.ds = 0.0
        self.kv = 0
        self.next = DRAWS
        self.device = device
        self.draws = [0.0] * DRAWS


class Device:
    __slots__ = ("index", "state")

    def __init__(self, index: int) -> None:
        self.index = index
        self.state = 7919 * index + 1


def run_objects(n: int, s: int, duration: float, seed: int) -> int:
    rng = random.Random(seed)
    unif = rng.random
    devices = [Device(d) for d in range(n)]
    inbound: list[list[tuple[float, Session]]] = [[] for _ in range(s)]
    queue: list[deque[Session]] = [deque() for _ in range(s)]
    batch: list[list[Session]] = [[] for _ in range(s)]
    busy = [False] * s
    bstart = [0.0] * s
    wake = [math.inf] * s
    arrivals: list[tuple[float, int, object]] = [(unif(), d, devices[d]) for d in range(n)]
    heapq.heapify(arrivals)
    servers: list[tuple[float, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    rounds = 0
    seq = n
    while True:
        ta = arrivals[0][0] if arrivals else math.inf
        ts = servers[0][0] if servers else math.inf
        if ta <= ts:
            if ta > duration:
                break
            t, _, who = pop(arrivals)
            if isinstance(who, Session):  # the last tokens reached the device: it thinks
                who.device.state += 1
                nxt = t - math.log(1.0 - unif())
                if nxt <= duration:
                    seq += 1
                    push(arrivals, (nxt, seq, who.device))
                continue
            assert isinstance(who, Device)
            a, b = int(unif() * s), int(unif() * s)
            srv = a if len(queue[a]) + len(inbound[a]) <= len(queue[b]) + len(inbound[b]) else b
            ses = Session(40.0 + int(unif() * 50), srv, who)
            arrive = t + 0.025
            inbound[srv].append((arrive, ses))
            if not busy[srv] and arrive < wake[srv]:
                wake[srv] = arrive
                push(servers, (arrive, s + srv))
            continue
        t, i = pop(servers)
        if i < s:  # a batch ends
            srv = i
            busy[srv] = False
            start = bstart[srv]
            verify = t - start
            inb = inbound[srv]
            for ses in batch[srv]:
                pos = int(ses.committed)
                acc = min(RUNS[pos % 64], GAMMA)
                total = pos + acc + 1
                ses.committed = float(total)
                ses.qs += start - ses.enq
                ses.vs += verify
                rounds += 1
                k = ses.next
                draws = ses.draws
                if k + 2 > DRAWS:
                    for w in range(DRAWS):
                        draws[w] = unif()
                    k = 0
                down = 0.005 - 0.001 * math.log(1.0 - draws[k])
                up = 0.005 - 0.001 * math.log(1.0 - draws[k + 1])
                ses.next = k + 2
                deliver = t + down
                if total >= ses.out:
                    ses.kv = 0
                    seq += 1
                    push(arrivals, (deliver, seq, ses))
                    continue
                ses.kv = 147 + total
                draft = 0.004 * GAMMA
                ses.ds += draft
                ses.net += down + up
                inb.append((deliver + draft + up, ses))
            batch[srv] = []
        else:  # a wake-up
            srv = i - s
            if wake[srv] == t:
                wake[srv] = math.inf
            if busy[srv]:
                continue
        inb = inbound[srv]
        q = queue[srv]
        keep = []
        for at, ses in inb:
            if at <= t:
                ses.enq = at
                q.append(ses)
            else:
                keep.append((at, ses))
        inbound[srv] = keep
        if not q:
            m = min((at for at, _ in keep), default=math.inf)
            if m < wake[srv]:
                wake[srv] = m
                push(servers, (m, s + srv))
            continue
        size = tokens = 0
        chosen = batch[srv]
        while q and size < MAXB:
            ses = q[0]
            fresh = 147 + int(ses.committed) + GAMMA - ses.kv
            if size and tokens + fresh > 8192:
                break
            q.popleft()
            chosen.append(ses)
            size += 1
            tokens += fresh
        busy[srv] = True
        bstart[srv] = t
        push(servers, (t + 0.02 + 0.0005 * size + 1e-6 * tokens, srv))
    return rounds


def run_arrays(n: int, s: int, duration: float, seed: int) -> int:
    rng = random.Random(seed)
    unif = rng.random
    rec = array("d", bytes(8 * F * s * SLOTS))
    kv = array("q", bytes(8 * s * SLOTS))
    nxt_draw = array("q", bytes(8 * s * SLOTS))
    owner = array("q", bytes(8 * s * SLOTS))
    dev_state = array("q", [7919 * d + 1 for d in range(n)])
    free = [list(range(srv * SLOTS + SLOTS - 1, srv * SLOTS - 1, -1)) for srv in range(s)]
    inbound: list[list[tuple[float, int]]] = [[] for _ in range(s)]
    queue: list[deque[int]] = [deque() for _ in range(s)]
    batch: list[list[int]] = [[] for _ in range(s)]
    busy = [False] * s
    bstart = [0.0] * s
    wake = [math.inf] * s
    arrivals: list[tuple[float, int]] = [(unif(), d) for d in range(n)]
    heapq.heapify(arrivals)
    servers: list[tuple[float, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    rounds = 0
    while True:
        ta = arrivals[0][0] if arrivals else math.inf
        ts = servers[0][0] if servers else math.inf
        if ta <= ts:
            if ta > duration:
                break
            t, i = pop(arrivals)
            if i >= n:  # the last tokens reached the device: it thinks
                sl = i - n
                d = owner[sl]
                dev_state[d] += 1
                free[int(rec[sl * F + SERVER])].append(sl)
                nxt = t - math.log(1.0 - unif())
                if nxt <= duration:
                    push(arrivals, (nxt, d))
                continue
            a, b = int(unif() * s), int(unif() * s)
            srv = a if len(queue[a]) + len(inbound[a]) <= len(queue[b]) + len(inbound[b]) else b
            sl = free[srv].pop()
            base = sl * F
            rec[base : base + 8] = array("d", (0.0, 40.0 + int(unif() * 50), srv, 0, 0, 0, 0, 0))
            kv[sl] = 0
            nxt_draw[sl] = DRAWS
            owner[sl] = i
            arrive = t + 0.025
            inbound[srv].append((arrive, sl))
            if not busy[srv] and arrive < wake[srv]:
                wake[srv] = arrive
                push(servers, (arrive, s + srv))
            continue
        t, i = pop(servers)
        if i < s:  # a batch ends
            srv = i
            busy[srv] = False
            start = bstart[srv]
            verify = t - start
            inb = inbound[srv]
            for sl in batch[srv]:
                base = sl * F
                pos = int(rec[base])
                acc = min(RUNS[pos % 64], GAMMA)
                total = pos + acc + 1
                rec[base] = total
                rec[base + QS] += start - rec[base + ENQ]
                rec[base + VS] += verify
                rounds += 1
                k = nxt_draw[sl]
                if k + 2 > DRAWS:
                    for w in range(DRAWS):
                        rec[base + 8 + w] = unif()
                    k = 0
                down = 0.005 - 0.001 * math.log(1.0 - rec[base + 8 + k])
                up = 0.005 - 0.001 * math.log(1.0 - rec[base + 9 + k])
                nxt_draw[sl] = k + 2
                deliver = t + down
                if total >= rec[base + OUT]:
                    kv[sl] = 0
                    push(arrivals, (deliver, n + sl))
                    continue
                kv[sl] = 147 + total
                draft = 0.004 * GAMMA
                rec[base + DS] += draft
                rec[base + NET] += down + up
                inb.append((deliver + draft + up, sl))
            batch[srv] = []
        else:  # a wake-up
            srv = i - s
            if wake[srv] == t:
                wake[srv] = math.inf
            if busy[srv]:
                continue
        inb = inbound[srv]
        q = queue[srv]
        keep = []
        for at, sl in inb:
            if at <= t:
                rec[sl * F + ENQ] = at
                q.append(sl)
            else:
                keep.append((at, sl))
        inbound[srv] = keep
        if not q:
            m = min((at for at, _ in keep), default=math.inf)
            if m < wake[srv]:
                wake[srv] = m
                push(servers, (m, s + srv))
            continue
        size = tokens = 0
        chosen = batch[srv]
        while q and size < MAXB:
            sl = q[0]
            fresh = 147 + int(rec[sl * F]) + GAMMA - kv[sl]
            if size and tokens + fresh > 8192:
                break
            q.popleft()
            chosen.append(sl)
            size += 1
            tokens += fresh
        busy[srv] = True
        bstart[srv] = t
        push(servers, (t + 0.02 + 0.0005 * size + 1e-6 * tokens, srv))
    return rounds


class Calendar:
    """A calendar queue of (time, id) events: buckets of ``width_s``, the current one
    sorted (latest first); pops in the order a heap of the same tuples gives."""

    __slots__ = ("buckets", "current", "key", "width_s")

    def __init__(self, width_s: float) -> None:
        self.width_s = width_s
        self.buckets: dict[int, list[tuple[float, int]]] = {}
        self.key = 0
        self.current: list[tuple[float, int]] = []

    def push(self, event: tuple[float, int]) -> None:
        key = int(event[0] / self.width_s)
        if key <= self.key:
            bisect.insort(self.current, event, key=_negated)
        else:
            bucket = self.buckets.get(key)
            if bucket is None:
                self.buckets[key] = [event]
            else:
                bucket.append(event)

    def _refill(self) -> bool:
        buckets = self.buckets
        while not self.current:
            if not buckets:
                return False
            self.key += 1
            bucket = buckets.pop(self.key, None)
            if bucket is not None:
                bucket.sort(reverse=True)
                self.current = bucket
        return True

    def first(self) -> float:
        if not self.current and not self._refill():
            return math.inf
        return self.current[-1][0]

    def pop(self) -> tuple[float, int]:
        if not self.current:
            self._refill()
        return self.current.pop()


def _negated(event: tuple[float, int]) -> tuple[float, int]:
    return (-event[0], -event[1])


class Heap:
    """The (time, id) events in a heap, as heapq keeps them."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[tuple[float, int]] = []

    def push(self, event: tuple[float, int]) -> None:
        heapq.heappush(self.events, event)

    def first(self) -> float:
        return self.events[0][0] if self.events else math.inf

    def pop(self) -> tuple[float, int]:
        return heapq.heappop(self.events)


Arrivals = Heap | Calendar


def run_flat(n: int, s: int, duration: float, seed: int, calendar: bool = False) -> int:
    rng = random.Random(seed)
    unif = rng.random
    rec = array("d", bytes(8 * F * s * SLOTS))
    dev_state = array("q", [7919 * d + 1 for d in range(n)])
    free = [array("q", range(srv * SLOTS + SLOTS - 1, srv * SLOTS - 1, -1)) for srv in range(s)]
    inb_t = [array("d") for _ in range(s)]
    inb_i = [array("q") for _ in range(s)]
    queue: list[deque[int]] = [deque() for _ in range(s)]
    batch: list[list[int]] = [[] for _ in range(s)]
    busy = [False] * s
    bstart = [0.0] * s
    wake = [math.inf] * s
    arrivals: Arrivals = Calendar(8.0 / n) if calendar else Heap()
    for d in range(n):
        arrivals.push((unif(), d))
    servers: list[tuple[float, int]] = []
    push, pop = heapq.heappush, heapq.heappop
    rounds = 0
    while True:
        ta = arrivals.first()
        ts = servers[0][0] if servers else math.inf
        if ta <= ts:
            if ta > duration:
                break
            t, i = arrivals.pop()
            if i >= n:  # the last tokens reached the device: it thinks
                sl = i - n
                base = sl * F
                d = int(rec[base + OWNER])
                dev_state[d] += 1
                free[int(rec[base + SERVER])].append(sl)
                nxt = t - math.log(1.0 - unif())
                if nxt <= duration:
                    arrivals.push((nxt, d))
                continue
            a, b = int(unif() * s), int(unif() * s)
            srv = a if len(queue[a]) + len(inb_t[a]) <= len(queue[b]) + len(inb_t[b]) else b
            sl = free[srv].pop()
            base = sl * F
            rec[base : base + 12] = array(
                "d", (0.0, 40.0 + int(unif() * 50), srv, 0, 0, 0, 0, 0, 0, DRAWS, i, 0)
            )
            arrive = t + 0.025
            inb_t[srv].append(arrive)
            inb_i[srv].append(sl)
            if not busy[srv] and arrive < wake[srv]:
                wake[srv] = arrive
                push(servers, (arrive, s + srv))
            continue
        t, i = pop(servers)
        if i < s:  # a batch ends
            srv = i
            busy[srv] = False
            start = bstart[srv]
            verify = t - start
            it = inb_t[srv]
            ii = inb_i[srv]
            for sl in batch[srv]:
                base = sl * F
                pos = int(rec[base])
                acc = min(RUNS[pos % 64], GAMMA)
                total = pos + acc + 1
                rec[base] = total
                rec[base + QS] += start - rec[base + ENQ]
                rec[base + VS] += verify
                rounds += 1
                k = int(rec[base + NEXT])
                if k + 2 > DRAWS:
                    for w in range(DRAWS):
                        rec[base + 12 + w] = unif()
                    k = 0
                down = 0.005 - 0.001 * math.log(1.0 - rec[base + 12 + k])
                up = 0.005 - 0.001 * math.log(1.0 - rec[base + 13 + k])
                rec[base + NEXT] = k + 2
                deliver = t + down
                if total >= rec[base + OUT]:
                    rec[base + KV] = 0
                    arrivals.push((deliver, n + sl))
                    continue
                rec[base + KV] = 147 + total
                draft = 0.004 * GAMMA
                rec[base + DS] += draft
                rec[base + NET] += down + up
                it.append(deliver + draft + up)
                ii.append(sl)
            batch[srv] = []
        else:  # a wake-up
            srv = i - s
            if wake[srv] == t:
                wake[srv] = math.inf
            if busy[srv]:
                continue
        it = inb_t[srv]
        ii = inb_i[srv]
        q = queue[srv]
        kept = 0  # the blocks still in flight move up, in order
        m = math.inf
        for j in range(len(it)):
            at = it[j]
            if at <= t:
                sl = ii[j]
                rec[sl * F + ENQ] = at
                q.append(sl)
            else:
                it[kept] = at
                ii[kept] = ii[j]
                kept += 1
                if at < m:
                    m = at
        del it[kept:], ii[kept:]
        if not q:
            if m < wake[srv]:
                wake[srv] = m
                push(servers, (m, s + srv))
            continue
        size = tokens = 0
        chosen = batch[srv]
        while q and size < MAXB:
            sl = q[0]
            base = sl * F
            fresh = 147 + int(rec[base]) + GAMMA - int(rec[base + KV])
            if size and tokens + fresh > 8192:
                break
            q.popleft()
            chosen.append(sl)
            size += 1
            tokens += fresh
        busy[srv] = True
        bstart[srv] = t
        push(servers, (t + 0.02 + 0.0005 * size + 1e-6 * tokens, srv))
    return rounds


VARIANTS: dict[str, Callable[[int, int, float, int], int]] = {
    "objects": run_objects,
    "arrays": run_arrays,
    "flat": run_flat,
    "calendar": lambda n, s, duration, seed: run_flat(n, s, duration, seed, calendar=True),
}
SIZES = (2000, 20000, 100000)


def main() -> None:
    duration = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ns: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeats):  # interleaved: each repeat runs every variant at every size
        for n in SIZES:
            for name, run in VARIANTS.items():
                began = time.process_time()
                rounds = sum(run(n, n // 50, duration, seed) for seed in range(100000 // n))
                spent = time.process_time() - began
                ns.setdefault((name, n), []).append(spent * 1e9 / rounds)
                print(
                    f"{name:8s} {n:7d} devices: {rounds:8d} rounds, "
                    f"{spent * 1e9 / rounds:5.0f} ns per round",
                    flush=True,
                )
    for name in VARIANTS:
        small = ns[(name, SIZES[0])]
        cells = []
        for n in SIZES:
            here = ns[(name, n)]
            cell = f"{n}: {min(here):.0f}-{max(here):.0f} ns"
            if n != SIZES[0]:
                share = statistics.median(small) / statistics.median(here)
                cell += f" ({min(small) / max(here):.0%}-{max(small) / min(here):.0%}, {share:.0%})"
            cells.append(cell)
        print(f"{name:8s} " + ", ".join(cells))


if __name__ == "__main__":
    main()
