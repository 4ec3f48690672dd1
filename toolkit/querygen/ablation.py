"""Tables 3-5's rows (App. B.2, B.3, C), each a one-iteration alignment run in a process of its own.

A process that fine-tuned the 0.5B generator stays at ~17 GB resident afterwards, and the next row's
fine-tuning on top of it was OOM-killed on the 24 GB machine (the third row of one
``python -m toolkit.querygen ablate`` run); a fresh process per row returns that memory.
"""
from __future__ import annotations

import multiprocessing


def in_own_process(target, *args) -> int:
    """Run ``target(*args)`` in a fresh (spawned) process, wait, return its exit code (0: success;
    negative: killed by that signal, -9 typically out of memory). ``target`` must be importable by name."""
    p = multiprocessing.get_context("spawn").Process(target=target, args=args)
    p.start()
    p.join()
    return p.exitcode


def run_row(args, cfg, align_cfg) -> None:
    """One ablation row: :func:`toolkit.querygen.runs.run_alignment` for one iteration with
    ``align_cfg``, test answers on ``cfg.ablation_test_requests`` requests per test set."""
    from toolkit.querygen.runs import run_alignment
    run_alignment(args, cfg, align_cfg, stop_after=1, test_requests=cfg.ablation_test_requests)
