"""This process's resident memory and its peak since a reset (Linux ``/proc``), for tests
that check a server does not hold what a client sends."""

from __future__ import annotations


def _status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/self/status")


def rss_bytes() -> int:
    return _status_kib("VmRSS:") * 1024


def peak_rss_bytes() -> int:
    """The peak resident memory since the last :func:`reset_peak`."""
    return _status_kib("VmHWM:") * 1024


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
