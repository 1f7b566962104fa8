"""One broken GPU must not blind the host (issue 31, item 10).

The host is the real 8x A40 capture whose GPU 4 reads `ERR!` in every cell (driver
525.60.13 / CUDA 12.0; tests/fixtures/public/smi-a40-8x-525-err.txt, source in SOURCES.md):
its cc cannot be read, the other seven are one model."""

from __future__ import annotations

import shlex

import pytest

from gpudash.checks import run_checks
from gpudash.checks.finding import Severity
from gpudash.checks.stack import choose_torch
from gpudash.tasks.prepare import Facts, PrepareError, prepare
from gpudash.tasks.spec import load_tasks
from tests.support.hosts import host


def _index(prepared) -> str:
    for line in prepared.script.splitlines():
        if line.startswith("export GPUDASH_INDEX_URL="):
            return shlex.split(line.removeprefix("export "))[0].rsplit("/", 1)[-1]
    raise AssertionError("no index URL")


def test_the_a40_host_with_one_gpu_in_err_still_gets_a_torch_index_with_a_warning():
    facts = Facts.from_result(host("pcie-a40"))
    assert facts.ccs.count(None) == 1 and facts.broken == (4,)
    prepared = prepare(load_tasks()["torch"], facts)
    # driver 525.60.13 runs CUDA 12.x through minor-version compatibility: cu126 (sm_86).
    assert _index(prepared) == "cu126"
    note = prepared.notes[0]
    assert "8.6->sm_86" in note
    assert "warn: GPU 4 in error (cc unknown) left out" in note and "other 7, all cc 8.6" in note


def test_the_broken_gpu_is_still_a_fail_finding_of_its_own():
    found = {f.code: f for f in run_checks(host("pcie-a40"))}
    assert found["gpus.err"].severity is Severity.FAIL and "GPU 4" in found["gpus.err"].title


def test_eight_h200s_with_one_broken_choose_from_the_seven():
    choice = choose_torch("580.65.06", ["9.0"] * 7 + [None], broken=(7,))
    assert choice.build is not None and "warn: GPU 7 in error" in choice.why
    assert len(choice.verdict.gpus) == 7


@pytest.mark.parametrize(
    ("ccs", "broken", "why"),
    [
        # a GPU of unknown cc that is NOT in error could be another model: refused
        (["9.0"] * 7 + [None], (), "compute capability unknown for GPU 7"),
        # the readable GPUs are two models: which one the broken GPU is cannot be said
        (["9.0"] * 3 + ["8.0"] * 4 + [None], (7,), "compute capability unknown for GPU 7"),
        # nothing readable at all
        ([None, None], (0, 1), "compute capability unknown for GPU 0, 1"),
    ],
)
def test_without_one_readable_model_an_unknown_cc_is_still_refused(ccs, broken, why):
    choice = choose_torch("580.65.06", ccs, broken=broken)
    assert choice.build is None and choice.why.startswith(why)


def test_the_refusal_reaches_the_task_as_before_when_the_gpu_is_not_broken():
    with pytest.raises(PrepareError, match="compute capability unknown for GPU 1"):
        prepare(load_tasks()["torch"], Facts("13.0", ("9.0", None), True, "580.65.06"))
