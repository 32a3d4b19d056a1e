"""What ``edgespec reproduce wisp --quick`` leaves out of the full run: the claims it does
not run and the runs it shortens, read off the two plans (so the list stays true when a plan
changes). REPORT.md ends with it and the terminal prints it (``--help``: "its report says
what it leaves out"; :func:`~edgespec.reproduce.report_file.left_out_markdown`). The
predictor claims' rows name what they depend on of it (:func:`study_quick_run`,
:func:`runs_quick_run`): their magnitudes are not compared."""

from __future__ import annotations

from collections.abc import Sequence

from edgespec.reproduce.left_out import and_list, count, cut, missing, not_run
from edgespec.reproduce.wisp.claims import shortened
from edgespec.reproduce.wisp.predictor import PredictorPlan
from edgespec.reproduce.wisp.runs import Plan
from edgespec.reproduce.wisp.setup import CLASSES, WispSetup

CAPACITY_CLAIMS = {"qwen3-32b": "W1", "qwen3-14b": "W2"}
"""Which claim a target's capacities belong to."""


def _tok_s(classes: Sequence[str]) -> str:
    return and_list([f"{CLASSES[c]:g}" for c in classes]) + " tok/s"


def _devices(ns: Sequence[int]) -> str:
    return "N = " + and_list([str(n) for n in ns])


def _not_run(plan: Plan, predictor: PredictorPlan) -> list[str]:
    """The claims and sub-claims the quick plans do not run at all."""
    full, full_p = Plan.full(), PredictorPlan.full()
    out = [
        f"{CAPACITY_CLAIMS.get(t, t)} ({t} capacities of WISP, centralized and SLED, every "
        "class): not run"
        for t in full.targets
        if t not in plan.targets
    ]
    classes = missing(full.classes, plan.classes)
    if classes:
        about = "the capacities and the centralized setting there"
        out.append(not_run("W1 at", _tok_s(classes), _tok_s(plan.classes), about))
    out += [
        f"WISP without its predictor's capacities ({t}, W1's notes): not searched"
        for t in missing(full.without_predictor, plan.without_predictor)
    ]
    left = missing(full_p.goodput_devices, predictor.goodput_devices)
    if left:
        about = "its gains there and the non-decreasing check over them"
        out.append(not_run("W8 at", _devices(left), _devices(predictor.goodput_devices), about))
    return out


def _shortened(plan: Plan, predictor: PredictorPlan) -> list[str]:
    """What the quick plans run smaller than the full ones, each beside the full value."""
    full, full_p = Plan.full(), PredictorPlan.full()
    pairs = [
        ("W1's capacity searches: up to", plan.capacity_hi, full.capacity_hi, "device"),
        ("W3 at", plan.goodput_devices, full.goodput_devices, "device"),
        ("W4's operating point: at most", plan.operating_probes, full.operating_probes,
         "FCFS probe"),
        ("W7's acceptance runs:", predictor.acceptance_devices, full_p.acceptance_devices,
         "device"),
        ("W6's MLP search:", predictor.study.mlp_trials, full_p.study.mlp_trials, "trial"),
        ("W6's MLP training: at most", predictor.study.mlp_max_epochs,
         full_p.study.mlp_max_epochs, "epoch"),
        ("W6's tree searches, per tree:", predictor.study.tree_trials, full_p.study.tree_trials,
         "trial"),
        ("W10's latency:", predictor.study.latency_calls, full_p.study.latency_calls, "call"),
    ]  # fmt: skip
    out = [cut(what, q, f, noun) for what, q, f, noun in pairs if q != f]
    if plan.curve_devices != full.curve_devices:
        grid = full.curve_devices
        out.append(
            f"W4's violation curves: N = {', '.join(map(str, plan.curve_devices))} (full: "
            f"{grid[0]}–{grid[-1]}, {len(grid)} points)"
        )
    if plan.sensitivity != full.sensitivity:
        (_, q_s, q_hi), (_, f_s, f_hi) = plan.sensitivity, full.sensitivity
        out.append(
            f"the late-request and unfinished-request sensitivities: {q_s:g} s runs up to "
            f"{q_hi} devices (full: "
            f"{f_s:g} s up to {f_hi})"
        )
    return out + _runs_shortened(plan.setup, predictor.setup)


def _runs_shortened(setup: WispSetup, predictor: WispSetup) -> list[str]:
    """What the simulated runs of W1–W5 (``setup``) and of W7–W8 (``predictor``) shorten
    against the full plans': one item where both shorten the same, else one each."""
    main = _run(setup, Plan.full().setup)
    pred = _run(predictor, PredictorPlan.full().setup)
    if main and main == pred:
        return [f"every simulated run (W1, W3, W4, W5, W7, W8): {main}"]
    said = [("W1, W3, W4 and W5's simulated runs", main), ("W7 and W8's simulated runs", pred)]
    return [f"{which}: {what}" for which, what in said if what]


def _run(setup: WispSetup, full: WispSetup) -> str:
    """A simulated run's cuts: those its magnitudes depend on
    (:func:`~edgespec.reproduce.wisp.claims.shortened`), then its ramp."""
    ramp = (
        f"first requests spread over {setup.ramp_s:g} s (full: {full.ramp_s:g} s)"
        if setup.ramp_s < full.ramp_s
        else ""
    )
    return ", ".join(c for c in (shortened(setup, full), ramp) if c)


def study_quick_run(predictor: PredictorPlan) -> str:
    """What ``predictor``'s study shortens against the full one that W6's FPRs depend on
    (the hyper-parameter searches and the MLP's training); empty for the full plan."""
    study, full = predictor.study, PredictorPlan.full().study
    cuts = []
    if study.mlp_trials < full.mlp_trials or study.mlp_max_epochs < full.mlp_max_epochs:
        cuts.append(
            f"{count(study.mlp_trials, 'MLP trial')} of at most "
            f"{count(study.mlp_max_epochs, 'epoch')} (full: {full.mlp_trials} of "
            f"{full.mlp_max_epochs})"
        )
    if study.tree_trials < full.tree_trials:
        cuts.append(f"{count(study.tree_trials, 'trial')} per tree (full: {full.tree_trials})")
    return ", ".join(cuts)


def runs_quick_run(predictor: PredictorPlan, devices: bool = False) -> str:
    """What ``predictor``'s simulated runs (W7's, or W8's) shorten against the full plan's
    that their magnitudes depend on, with W7's device count where ``devices``; empty for
    the full plan."""
    full = PredictorPlan.full()
    cuts = [shortened(predictor.setup, full.setup)]
    if devices and predictor.acceptance_devices < full.acceptance_devices:
        n, f = predictor.acceptance_devices, full.acceptance_devices
        cuts.insert(0, f"{count(n, 'device')} (full: {f})")
    return ", ".join(c for c in cuts if c)


def left_out(plan: Plan, predictor: PredictorPlan) -> list[str]:
    """Everything the ``plan``/``predictor`` pair leaves out of the full run, claims not run
    first; empty for the full plans."""
    return [*_not_run(plan, predictor), *_shortened(plan, predictor)]
