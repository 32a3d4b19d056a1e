"""W8 (Table 6): goodput with and without the rejection predictor at N = 2–16 devices, the
devices drafting at Fig. 1's 50 tok/s as in every other claim, and at the speed Table 6
itself implies as a named sensitivity.

Table 6's setting is not stated (SEED-NOTES §1.4 item 14), and at Fig. 1's 50 tok/s its
goodput is out of reach: 14.23 tok/s from two devices is 7.1 tok/s each, where a device
drafting at 50 tok/s commits ≈ 22. With the server idle (N = 2), a device's goodput is
the tokens a round commits over the round's time,

    g = E[C] / (K / s_d + RTT + T̂_verify),   E[C] = 1 + Σ_{j=1..K} α^j,

with T̂_verify Eq. 19 for one request at the mean context (K new tokens on a cached
prefix). Solved for s_d at Table 6's OFF goodput (:func:`table6_speed`), it gives the speed
Table 6 implies. It is not W8's input: fitted to W8's own number, it would make OFF at
N = 2 a setting and move W8's gains towards the paper's, and no other claim could use it
(a device at it cannot serve the 8 tok/s class Table 2 serves 86 devices of). W8 runs at
Fig. 1's speed, chosen once for every claim; OFF and ON at the implied speed are shown in
W8's notes, never judged. ON is WISP the system (``wisp``: Table 10's operating point);
our own MLP's is in each row's note.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgespec.hardware.cost_models import load_wisp_coefficients
from edgespec.metrics.types import SystemMetrics
from edgespec.reproduce.jobs import write_scenario
from edgespec.reproduce.wisp.predictor import (
    OperatingStandIn,
    predictor_scenario,
    stopped_round,
)
from edgespec.reproduce.wisp.results_file import goodputs
from edgespec.reproduce.wisp.runner import LateRule, SimRun, named
from edgespec.reproduce.wisp.setup import MIXED, TARGET_PROFILES, WispSetup, scenario

TABLE_6_OFF = {2: 14.23, 4: 21.12, 8: 56.12, 16: 102.13}
TABLE_6_ON = {2: 17.14, 4: 26.43, 8: 70.43, 16: 132.80}
FIT_DEVICES = 2
FIG1_PASS_S = 0.02
"""Fig. 1: a device drafts 50 tokens/s (W1–W7's setting)."""


@dataclass(frozen=True, slots=True)
class Table6Speed:
    """The drafting speed Table 6's OFF goodput at N = 2 implies, with its terms."""

    device_goodput_tokens_per_s: float
    committed_per_round: float
    network_s: float
    verify_s: float
    gamma: int
    context_tokens: int

    @property
    def round_s(self) -> float:
        return self.committed_per_round / self.device_goodput_tokens_per_s

    @property
    def draft_pass_s(self) -> float:
        return (self.round_s - self.network_s - self.verify_s) / self.gamma

    @property
    def tokens_per_s(self) -> float:
        return 1.0 / self.draft_pass_s

    def at_fig1_speed(self) -> float:
        """A device's goodput at Fig. 1's 50 tok/s, over Table 6's."""
        round_s = self.gamma * FIG1_PASS_S + self.network_s + self.verify_s
        return self.committed_per_round / round_s / self.device_goodput_tokens_per_s

    def line(self) -> str:
        """The derivation, for REPORT.md's *Sensitivities*."""
        return (
            f"**W8 drafting speed** (chosen: Fig. 1's 50 tok/s, as for every claim): the speed "
            f"Table 6's OFF goodput at N = {FIT_DEVICES} implies is {self.tokens_per_s:.2f} tok/s "
            f"per device ({1e3 * self.draft_pass_s:.1f} ms per draft pass): "
            f"{TABLE_6_OFF[FIT_DEVICES]} tok/s is {self.device_goodput_tokens_per_s:.3f} per "
            f"device with the server idle; a round commits E[C] = 1 + Σα^j = "
            f"{self.committed_per_round:.3f} tokens (K = {self.gamma}), so it lasts "
            f"{1e3 * self.round_s:.1f} ms; less the {1e3 * self.network_s:g} ms RTT and "
            f"Eq. 19's {1e3 * self.verify_s:.2f} ms for one request at the mean context "
            f"({self.context_tokens} tokens), {self.gamma} passes take "
            f"{1e3 * self.gamma * self.draft_pass_s:.1f} ms. Fig. 1's 50 tok/s gives "
            f"{self.at_fig1_speed():.1f}× Table 6's goodput there. W8's notes give OFF → ON at "
            "the implied speed; it is not used to judge: fitted to W8's own number, and no "
            f"other claim could use it (one device at it commits "
            f"{self.device_goodput_tokens_per_s:.1f} tok/s, below the 8 tok/s class of which "
            "Table 2 serves 86 devices)."
        )

    def profile(self) -> dict[str, Any]:
        """The devices' Eq. 19 profile: a fixed time per draft pass."""
        return {
            "source": f"WISP Table 6, OFF at N = {FIT_DEVICES} (edgespec reproduce wisp)",
            "kind": "wisp",
            "hardware": "edge",
            "model": "any",
            "a_s": 0.0,
            "b_compute_s": 0.0,
            "b_read_s": 0.0,
            "c_s": self.draft_pass_s,
        }


def table6_speed(setup: WispSetup) -> Table6Speed:
    """Solve the module docstring's equation for the drafting speed in ``setup``."""
    coeff = load_wisp_coefficients(TARGET_PROFILES["qwen3-32b"])
    k, ctx = setup.gamma, setup.mean_context_tokens
    committed = 1.0 + sum(setup.alpha**j for j in range(1, k + 1))
    verify = coeff.time_s(k, k * (ctx + k), ctx)
    per_device = TABLE_6_OFF[FIT_DEVICES] / FIT_DEVICES
    return Table6Speed(per_device, committed, setup.rtt_ms / 1e3, verify, k, ctx)


@dataclass(frozen=True, slots=True)
class RoundCost:
    """One round of one request at the mean context, without and with the predictor:
    tokens committed and sent, and Eq. 19's time for it beyond the batch's c."""

    committed: float
    sent: float
    verify_s: float

    @property
    def per_token_s(self) -> float:
        return self.verify_s / self.committed


def round_cost(setup: WispSetup, stop: bool) -> RoundCost:
    """The expected round of ``setup``'s draft, with Table 10's predictor when ``stop``."""
    coeff = load_wisp_coefficients(TARGET_PROFILES["qwen3-32b"])
    k, ctx = setup.gamma, setup.mean_context_tokens
    accepted, sent = float(sum(setup.alpha**j for j in range(1, k + 1))), float(k)
    if stop:
        accepted, sent = stopped_round(setup.alpha, k, setup.predictor_tpr, setup.predictor_fpr)
    verify = coeff.a_s * sent + coeff.b_compute_s * sent * (ctx + sent) + coeff.b_read_s * ctx
    return RoundCost(1.0 + accepted, sent, verify)


Runs = tuple[SystemMetrics, SystemMetrics, SystemMetrics]
"""(OFF: WISP without predictor, ON: WISP at Table 10's point, ON with our MLP's point), at
Fig. 1's drafting speed."""
Implied = tuple[SystemMetrics, SystemMetrics]
"""(OFF, ON) at the drafting speed Table 6 implies: the sensitivity."""


@dataclass(frozen=True, slots=True)
class Table6Results:
    setup: WispSetup
    goodput: dict[int, Runs]
    implied: dict[int, Implied]
    files: tuple[str, ...]
    """The profile and scenario files written, relative to the run folder."""

    @property
    def speed(self) -> Table6Speed:
        return table6_speed(self.setup)

    def to_dict(self) -> dict[str, Any]:
        names = ("off", "on", "on_measured_mlp")
        return {
            "speed": {**asdict(self.speed), "tokens_per_s": self.speed.tokens_per_s},
            "goodput": [
                {"devices": n, **{k: goodputs(m) for k, m in zip(names, runs, strict=True)}}
                for n, runs in sorted(self.goodput.items())
            ],
            "at_implied_speed": [
                {"devices": n, **{k: goodputs(m) for k, m in zip(names[:2], runs, strict=True)}}
                for n, runs in sorted(self.implied.items())
            ],
        }


def _runs(
    setup: WispSetup, n: int, point: OperatingStandIn, implied: str
) -> dict[str, dict[str, Any]]:
    """The scenarios W8 runs at ``n`` devices, by file-name part: OFF, ON and ON with our
    MLP at Fig. 1's speed, then OFF and ON on the ``implied`` device profile."""

    def wisp(system: str, profile: str | None = None) -> dict[str, Any]:
        return scenario(setup, system, devices=n, slo_mix=MIXED, device_profile=profile)

    return {
        "off": wisp("wisp-np"),
        "on": wisp("wisp"),
        "on-measured": predictor_scenario(setup, n, point),
        "implied-off": wisp("wisp-np", implied),
        "implied-on": wisp("wisp", implied),
    }


def run_table6(
    setup: WispSetup,
    devices: tuple[int, ...],
    point: OperatingStandIn,
    rule: LateRule,
    out: Path,
) -> Table6Results:
    """OFF / ON / ON with our MLP at each N in ``devices`` at the setup's drafting speed,
    and OFF / ON at :func:`table6_speed` (the sensitivity); its profile (``out/profiles``)
    and the runs' scenarios (``out/scenarios``) are written, each naming the profile
    relative to itself (a scenario file's relative path is read against its folder), so
    the run folder can be moved or copied whole."""
    files = [write_scenario(out / "profiles", "edge-table6", table6_speed(setup).profile())]
    scenarios = out / "scenarios"
    beside = os.path.relpath(out / files[0], scenarios)  # ../profiles/edge-table6.yaml
    goodput, implied = {}, {}
    for n in devices:
        runs = _runs(setup, n, point, str((out / files[0]).resolve()))
        written = _runs(setup, n, point, beside)
        for name, data in written.items():
            files.append(write_scenario(scenarios, f"table6-{name}-{n}", named(data, rule)))
        m = {name: SimRun(rule)(data) for name, data in runs.items()}
        goodput[n] = (m["off"], m["on"], m["on-measured"])
        implied[n] = (m["implied-off"], m["implied-on"])
    return Table6Results(setup, goodput, implied, tuple(files))
