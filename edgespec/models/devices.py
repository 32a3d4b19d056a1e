"""Whether the device ``--device`` names is there (torch imported here, not in
:mod:`edgespec.arguments`, which the simulator imports too): a GPU torch cannot use stops a
command before any weight loads, naming the flag."""

from __future__ import annotations

import argparse

from edgespec.arguments import DevicePlacement, placement_of
from edgespec.errors import UserInputError


def device_placement(args: argparse.Namespace) -> DevicePlacement:
    """The :class:`~edgespec.arguments.DevicePlacement` of a command parsed with
    :func:`~edgespec.arguments.add_device_arguments`, defaults resolved (cpu; float32 on the
    CPU, bfloat16 on a GPU); a GPU this machine does not have is a :class:`UserInputError`
    naming ``--device`` (:func:`check_device_available`)."""
    placement = placement_of(args)
    check_device_available(placement.device)
    return placement


def check_device_available(device: str) -> None:
    """Nothing on the CPU; a ``cuda`` device torch cannot use (a CPU-only build of torch,
    no GPU or driver, an index past the last GPU) is a :class:`UserInputError` naming
    ``--device``."""
    if device == "cpu":
        return
    import torch

    if not torch.cuda.is_available():
        raise UserInputError(
            f"--device {device}: CUDA is not available to this torch "
            f"(torch {torch.__version__}, torch.cuda.is_available() is false: a CPU-only "
            "build, or no GPU or driver); use --device cpu, or install a CUDA build of torch "
            "(docs/DEPLOY.md, On a GPU server)"
        )
    index = int(device.partition(":")[2] or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise UserInputError(
            f"--device {device}: this machine has {count} CUDA device(s), cuda:0..cuda:{count - 1}"
        )
